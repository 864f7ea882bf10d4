"""The write policy (pure): globs, the six secret detectors, the entropy scan, refusal codes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from kodiai.config.models import DEFAULT_DENY_PATHS, WriteConfig
from kodiai.mention.write.policy import (
    SECRET_DETECTORS,
    WritePolicy,
    WritePolicyError,
    added_lines,
    check_write_policy,
    find_high_entropy_token,
    find_write_policy_violation,
    is_entropy_candidate,
    shannon_entropy,
)

PAT = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"  # ghp_ + 36 alnum


def verdict(
    paths: Sequence[str],
    added: Mapping[str, Sequence[str]] | None = None,
    *,
    deny: Sequence[str] = DEFAULT_DENY_PATHS,
    allow: Sequence[str] = (),
    scan: bool = True,
) -> WritePolicyError | None:
    return find_write_policy_violation(paths, added or {}, deny, allow, scan)


def detector_for(line: str) -> str | None:
    err = verdict(["notes.txt"], {"notes.txt": [line]}, deny=())
    return err.detector if err else None


# ---- no changes -------------------------------------------------------------------------------


def test_nothing_staged_is_no_changes() -> None:
    err = verdict([])
    assert err is not None
    assert err.code == "write-policy-no-changes"
    assert err.message == "No staged changes to commit"
    assert (err.rule, err.path, err.pattern, err.detector) == (None, None, None, None)


def test_check_write_policy_raises_and_passes() -> None:
    with pytest.raises(WritePolicyError) as info:
        check_write_policy([], {}, (), (), True)
    assert info.value.code == "write-policy-no-changes"
    assert str(info.value) == "No staged changes to commit"
    check_write_policy(["src/app.py"], {"src/app.py": ["print('hi')"]}, DEFAULT_DENY_PATHS, (), True)


# ---- deny globs (the default list) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        (".github/workflows/ci.yml", ".github/"),
        (".git/config", ".git/"),
        (".planning/notes.md", ".planning/"),
        (".kodiai.yml", ".kodiai.yml"),
        (".env", ".env"),
        (".env.local", ".env.*"),
        ("server.pem", "**/*.pem"),
        ("deploy/certs/server.pem", "**/*.pem"),
        ("keys/id.key", "**/*.key"),
        ("a/b/store.p12", "**/*.p12"),
        ("store.pfx", "**/*.pfx"),
        ("config/aws_credentials.json", "**/*credentials*"),
        ("src/my_secret_config.py", "**/*secret*"),
    ],
)
def test_default_deny_paths(path: str, pattern: str) -> None:
    err = verdict(["src/ok.py", path])
    assert err is not None
    assert err.code == "write-policy-denied-path"
    assert err.rule == "denyPaths"
    assert err.path == path
    assert err.pattern == pattern
    assert err.message == f"Write blocked: denied path staged: {path}"


@pytest.mark.parametrize(
    "path",
    [
        "config/.env",  # `.env` has no slash: root only
        "config/.env.production",
        "src/.github/notes.md",  # `.github/` is anchored at the root
        "docs/.kodiai.yml",
        "src/app.py",
        "README.md",
    ],
)
def test_default_deny_paths_are_anchored(path: str) -> None:
    assert verdict([path]) is None


def test_root_only_semantics_of_a_slashless_pattern() -> None:
    err = verdict(["README.md"], deny=["README.md"])
    assert err is not None and err.pattern == "README.md" and err.path == "README.md"
    assert verdict(["docs/README.md"], deny=["README.md"]) is None
    assert verdict(["notes.md"], deny=["*.md"]) is not None
    assert verdict(["docs/notes.md"], deny=["*.md"]) is None


def test_star_does_not_cross_slashes_and_dotfiles_match() -> None:
    assert verdict(["src/a/b.py"], deny=["src/*"]) is None
    assert verdict(["src/b.py"], deny=["src/*"]) is not None
    assert verdict(["src/.hidden"], deny=["src/*"]) is not None


def test_trailing_slash_means_everything_below_and_the_raw_pattern_is_reported() -> None:
    err = verdict(["docs/guide/intro.md"], deny=["  docs/  "])
    assert err is not None
    assert err.pattern == "  docs/  "  # the entry as written in the config
    assert verdict(["docsx/intro.md"], deny=["docs/"]) is None


def test_first_matching_pattern_and_first_matching_path() -> None:
    err = verdict(["a.txt", "x/y.pem", "z.key"], deny=["**/*.key", "**/*.pem", "x/**"])
    assert err is not None
    assert err.path == "x/y.pem"
    assert err.pattern == "**/*.pem"


def test_empty_patterns_are_dropped() -> None:
    assert verdict([".env"], deny=["", "   "]) is None
    assert verdict(["README.md"], deny=(), allow=["", " "]) is None  # an allow list of blanks is empty


# ---- allow globs ------------------------------------------------------------------------------


def test_allow_list_blocks_a_path_outside_it() -> None:
    err = verdict(["src/app.py", "README.md"], allow=["src/"])
    assert err is not None
    assert err.code == "write-policy-not-allowed"
    assert err.rule == "allowPaths"
    assert err.path == "README.md"
    assert err.pattern is None
    assert err.message == "Write blocked: path is not allowlisted: README.md"


def test_allow_list_admits_matching_paths() -> None:
    assert verdict(["src/app.py", "src/deep/x.ts"], allow=["src/"]) is None
    assert verdict(["x.md"], allow=["*.md"]) is None
    assert verdict(["docs/x.md"], allow=["*.md"]) is not None
    assert verdict(["docs/x.md"], allow=["**/*.md"]) is None


def test_empty_allow_list_allows_everything_not_denied() -> None:
    assert verdict(["anything/at/all.txt"], allow=()) is None


def test_deny_wins_over_allow_and_is_checked_for_every_path_first() -> None:
    err = verdict(["src/server.pem"], allow=["src/"])
    assert err is not None and err.code == "write-policy-denied-path"
    # README.md is not allowlisted, but the later denied path is reported: deny runs over all paths first
    err = verdict(["README.md", ".env"], allow=["src/"])
    assert err is not None and err.code == "write-policy-denied-path" and err.path == ".env"


def test_invalid_glob_is_refused_as_not_allowed() -> None:
    huge = "a" * 70000
    for deny, allow in (([huge], ()), ((), [huge])):
        err = verdict(["src/app.py"], deny=deny, allow=allow)
        assert err is not None
        assert err.code == "write-policy-not-allowed"
        assert err.message.startswith("Write blocked: invalid denyPaths/allowPaths pattern: ")
        assert "exceeds maximum allowed length" in err.message
        assert err.path is None


def test_policy_refusals_precede_the_secret_scan() -> None:
    err = verdict([".env"], {".env": [PAT]})
    assert err is not None and err.code == "write-policy-denied-path"


# ---- the six regex detectors ------------------------------------------------------------------


def test_detector_order() -> None:
    assert [d.name for d in SECRET_DETECTORS] == [
        "private-key",
        "aws-access-key",
        "github-pat",
        "slack-token",
        "github-token",
        "github-x-access-token-url",
    ]


@pytest.mark.parametrize(
    ("line", "detector"),
    [
        ("-----BEGIN PRIVATE KEY-----", "private-key"),
        ("-----BEGIN RSA PRIVATE KEY-----", "private-key"),
        ("-----BEGIN DSA PRIVATE KEY-----", "private-key"),
        ("-----BEGIN EC PRIVATE KEY-----", "private-key"),
        ("key = '-----BEGIN OPENSSH PRIVATE KEY-----'", "private-key"),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "private-key"),
        ("aws_key = AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
        (f"token: {PAT}", "github-pat"),
        ("SLACK=xoxb-1234567890-abcdef", "slack-token"),
        ("xoxp-aaaaaaaaaa", "slack-token"),
        ("xoxa-0000000000", "slack-token"),
        ("xoxr-0000000000", "slack-token"),
        ("xoxs-0000000000", "slack-token"),
        ("gho_" + "a" * 36, "github-token"),
        ("ghu_" + "b" * 36, "github-token"),
        ("ghs_" + "c" * 50, "github-token"),
        ("ghp_" + "d" * 40, "github-pat"),  # ghp_ + 36 matches first
        ("url = https://x-access-token:abc@github.com/o/r.git", "github-x-access-token-url"),
    ],
)
def test_detector_positive(line: str, detector: str) -> None:
    err = verdict(["notes.txt"], {"notes.txt": ["first line", line]}, deny=())
    assert err is not None
    assert err.code == "write-policy-secret-detected"
    assert err.rule == "secretScan"
    assert err.path == "notes.txt"
    assert err.detector == f"regex:{detector}"
    assert err.message == f"Write blocked: suspected secret detected ({detector}) in staged additions"


@pytest.mark.parametrize(
    "line",
    [
        "-----BEGIN PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----",
        "-----BEGIN FOO PRIVATE KEY-----",
        "AKIAIOSFODNN7EXAMP",  # 14 after AKIA
        "akiaiosfodnn7example",
        "AKIAiosfodnn7example",
        "ghp_" + "a" * 35,
        "ghp-" + "a" * 36,
        "xoxb-123456789",  # 9 after the dash
        "xoxc-1234567890",
        "xox-1234567890",
        "gho_" + "a" * 35,
        "ghx_" + "a" * 40,
        "https://x-access-token@github.com/o/r.git",
        "https://github.com/o/r.git",
        "plain text",
    ],
)
def test_detector_negative(line: str) -> None:
    assert detector_for(line) is None


def test_detectors_run_detector_by_detector_over_files() -> None:
    added = {"a.txt": ["AKIAIOSFODNN7EXAMPLE"], "b.txt": ["-----BEGIN RSA PRIVATE KEY-----"]}
    err = verdict(["a.txt", "b.txt"], added, deny=())
    assert err is not None
    assert (err.detector, err.path) == ("regex:private-key", "b.txt")
    added = {"a.txt": [PAT], "b.txt": [PAT]}
    err = verdict(["a.txt", "b.txt"], added, deny=())
    assert err is not None and err.path == "a.txt"


def test_secret_spanning_two_lines_is_not_joined_into_one() -> None:
    assert verdict(["a.txt"], {"a.txt": ["ghp_" + "a" * 20, "a" * 16]}, deny=()) is None


def test_secret_scan_off_skips_only_entropy() -> None:
    """Port deviation (docs/parity.md): the flag governs the entropy heuristic only; tokens and keys are
    always refused (the original let ``secretScan.enabled: false`` commit them)."""
    err = verdict(["a.txt"], {"a.txt": [PAT, "-----BEGIN PRIVATE KEY-----"]}, deny=(), scan=False)
    assert err is not None and err.detector == "regex:private-key"
    random_token = "Zx9" + "".join(chr(65 + (i * 7) % 26) + str(i % 10) for i in range(20))
    assert verdict(["a.txt"], {"a.txt": [random_token]}, deny=(), scan=True) is not None
    assert verdict(["a.txt"], {"a.txt": [random_token]}, deny=(), scan=False) is None


def test_message_never_contains_the_secret() -> None:
    err = verdict(["a.txt"], {"a.txt": [PAT]}, deny=())
    assert err is not None and PAT not in err.message and PAT not in repr(err)


# ---- added lines only ---------------------------------------------------------------------------

DIFF = f"""diff --git a/config.txt b/config.txt
index 1111111..2222222 100644
--- a/config.txt
+++ b/config.txt
@@ -1,3 +1,3 @@
 name = demo
-token = {PAT}
+token = read-from-env
 other = 1
"""


def test_added_lines_skip_headers_context_and_removals() -> None:
    assert added_lines(DIFF) == ["token = read-from-env"]


def test_removing_a_secret_is_allowed() -> None:
    assert verdict(["config.txt"], {"config.txt": added_lines(DIFF)}, deny=()) is None


def test_added_line_starting_with_two_plus_signs_is_skipped_like_the_header() -> None:
    # an added line whose text is "++ghp_…" shows as "+++ghp_…" in the diff
    assert added_lines(f"+++ b/x\n+++{PAT}\n++x\n") == ["+x"]


def test_added_lines_of_a_new_file() -> None:
    diff = "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+one\n+\n"
    assert added_lines(diff) == ["one", ""]


# ---- entropy ----------------------------------------------------------------------------------

# 8 characters twice and 16 once over 32 characters: exactly 5 - 16/32 = 4.5 bits per character.
AT_THRESHOLD = "abcdefgh" * 2 + "ijklmnop01234567"
# 9 characters twice and 14 once: 5 - 18/32 = 4.4375.
BELOW_THRESHOLD = "abcdefghi" * 2 + "jklmnop0123456"


def test_shannon_entropy_values() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("ab") == 1.0
    assert shannon_entropy(AT_THRESHOLD) == 4.5
    assert shannon_entropy(BELOW_THRESHOLD) == 4.4375
    assert len(AT_THRESHOLD) == len(BELOW_THRESHOLD) == 32


def test_entropy_threshold_is_inclusive() -> None:
    err = verdict(["cfg.py"], {"cfg.py": [f"KEY = '{AT_THRESHOLD}'"]}, deny=())
    assert err is not None
    assert err.code == "write-policy-secret-detected"
    assert err.detector == "entropy"
    assert err.rule == "secretScan"
    assert err.path == "cfg.py"
    assert err.message == (
        "Write blocked: suspected secret detected (entropy): High-entropy token-like string detected "
        "(entropy=4.50, length=32)"
    )
    assert verdict(["cfg.py"], {"cfg.py": [f"KEY = '{BELOW_THRESHOLD}'"]}, deny=()) is None


def test_entropy_message_rounds_to_two_decimals_and_reports_length() -> None:
    token = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz"  # 33 distinct characters: log2(33) = 5.044
    err = verdict(["x"], {"x": [token]}, deny=())
    assert err is not None
    assert err.message.endswith("(entropy=5.04, length=33)")


def test_tokens_shorter_than_32_are_ignored() -> None:
    assert find_high_entropy_token(["abcdefghijklmnopqrstuvwxyz01234"]) is None  # 31, entropy 4.95
    hit = find_high_entropy_token(["abcdefghijklmnopqrstuvwxyz012345"])
    assert hit is not None and hit.length == 32 and hit.entropy == 5.0


def test_characters_outside_the_token_class_split_tokens() -> None:
    assert find_high_entropy_token(["abcdefghijklmnop.qrstuvwxyz012345"]) is None
    assert find_high_entropy_token(["abcdefghijklmnop_qrstuvwxyz012345"]) is not None
    assert find_high_entropy_token(["abcdefghijklmnop+qrs/tuv=wxyz-012345"]) is not None


def test_letter_and_digit_are_both_required() -> None:
    letters_only = "abcdefghijklmnopqrstuvwxyzABCDEF"  # entropy 5.0, no digit
    assert shannon_entropy(letters_only) == 5.0
    assert find_high_entropy_token([letters_only]) is None
    assert not is_entropy_candidate("0123456789_-=+/0123456789_-=+/01")  # no letter
    assert is_entropy_candidate(letters_only[:-1] + "1")


def test_hex_digests_and_uuids_are_skipped() -> None:
    for length in (32, 40, 64):
        assert not is_entropy_candidate(("0123456789abcdefABCDEF" * 3)[:length])
    assert is_entropy_candidate(("0123456789abcdef" * 3)[:33])  # not a digest length
    assert is_entropy_candidate(("0123456789abcdef" * 3)[:31] + "g")  # 32 but not pure hex
    assert not is_entropy_candidate("123e4567-e89b-12d3-a456-426614174000")
    assert not is_entropy_candidate("123E4567-E89B-42D3-B456-426614174000")
    assert is_entropy_candidate("123e4567-e89b-62d3-a456-426614174000")  # version 6: not the v1-5 layout
    assert is_entropy_candidate("123e4567-e89b-12d3-c456-426614174000")  # variant c: not the layout


def test_entropy_reports_the_first_file_with_a_hit_after_all_regexes() -> None:
    token = "abcdefghijklmnopqrstuvwxyz012345"
    added = {"a.txt": [token], "b.txt": [PAT]}
    err = verdict(["a.txt", "b.txt"], added, deny=())
    assert err is not None and err.detector == "regex:github-pat" and err.path == "b.txt"
    err = verdict(["a.txt", "b.txt", "c.txt"], {"b.txt": [token], "c.txt": [token]}, deny=())
    assert err is not None and err.detector == "entropy" and err.path == "b.txt"


def test_low_entropy_long_tokens_pass() -> None:
    assert (
        verdict(["a"], {"a": ["a1" * 30, "x" * 100, "some_long_identifier_name_with_1_digit"]}, deny=())
        is None
    )


# ---- the policy object ------------------------------------------------------------------------


def test_policy_from_config() -> None:
    default = WritePolicy.from_config(WriteConfig())
    assert default == WritePolicy()
    assert default.deny_paths == DEFAULT_DENY_PATHS and default.allow_paths == () and default.secret_scan
    custom = WriteConfig.model_validate(
        {"allowPaths": ["src/"], "denyPaths": ["x"], "secretScan": {"enabled": False}}
    )
    assert WritePolicy.from_config(custom) == WritePolicy(("x",), ("src/",), False)
