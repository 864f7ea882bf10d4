"""Guarded `.kodiai.yml` settings fail closed (issue 24; docs/parity.md "Security over parity").

The original resets an invalid section to its defaults. For the settings that decide who or what may act
that default is often the permissive one (`mention.allowedUsers: alice` → everyone may mention the bot), so
an unreadable guarded setting takes its safe value instead, and says so in `failed_closed`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from kodiai.config import DEFAULT_DENY_PATHS, RepoConfigError, parse_repo_config
from kodiai.config.guarded import NOBODY
from kodiai.config.loader import FAIL_CLOSED_LOG_MESSAGE, WARNING_LOG_MESSAGE, log_section_warnings
from kodiai.log import get_logger
from kodiai.review.local_branch import load_config_at
from support.gitrepo import commit_files, git

USERS = "mention.allowedUsers: nobody may mention the bot"
WRITE_OFF = (
    "write: write mode is off (apply:/change: are refused); every write.* key guards what the bot may push"
)


def closed(text: str) -> list[str]:
    return parse_repo_config(text).failed_closed


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("mention:\n  allowedUsers: alice\n", id="a-string"),
        pytest.param("mention:\n  allowedUsers:\n", id="null"),
        pytest.param("mention:\n  allowedUsers: [alice, 7]\n", id="a-number-item"),
        pytest.param("mention:\n  allowedUsers: [[alice]]\n", id="a-nested-list"),
        pytest.param("mention:\n  allowedUsers: {alice: true}\n", id="a-mapping"),
        pytest.param("mention:\n  allowed_users: alice\n", id="snake-case-key"),
        pytest.param("who: &w alice\nmention:\n  allowedUsers: *w\n", id="an-alias-to-a-string"),
        pytest.param("mention:\n  allowedUser: [alice]\n", id="misspelled-key"),
        pytest.param("mention:\n  AllowedUsers: [alice]\n", id="wrong-case-key"),
        pytest.param("mentions:\n  allowedUsers: [alice]\n", id="misspelled-section"),
    ],
)
def test_unreadable_allowed_users_lets_nobody_in(text: str) -> None:
    result = parse_repo_config(text)
    assert result.config.mention.allowed_users == [NOBODY]
    assert result.failed_closed == [USERS]
    assert [w.section for w in result.warnings] == ["mention"]
    assert result.config.mention.enabled is True  # only the broken key closes


def test_nobody_is_no_github_login() -> None:
    assert " " in NOBODY  # logins are letters, digits and hyphens: no author can equal it


def test_a_null_mention_section_turns_mentions_off() -> None:
    result = parse_repo_config("mention:\n")
    m = result.config.mention
    assert (m.enabled, m.allowed_users, m.allowed_domains) == (False, [NOBODY], None)
    assert result.failed_closed[:2] == ["mention.enabled: mentions are off", USERS]


@pytest.mark.parametrize("value", ["42", '"false"', "on", "null"])
def test_unreadable_mention_switch_turns_mentions_off(value: str) -> None:
    result = parse_repo_config(f"mention:\n  enabled: {value}\n  acceptClaudeAlias: false\n")
    assert result.config.mention.enabled is False
    assert result.config.mention.accept_claude_alias is True  # not guarded: the section default
    assert result.failed_closed == ["mention.enabled: mentions are off"]


def test_a_broken_sibling_keeps_the_written_restrictions() -> None:
    """The original reset `enabled: false` and the allow-list along with the bad conversation limit."""
    text = "mention:\n  enabled: false\n  allowedUsers: [alice]\n  conversation:\n    maxTurnsPerPr: 500\n"
    result = parse_repo_config(text)
    m = result.config.mention
    assert (m.enabled, m.allowed_users, m.conversation.max_turns_per_pr) == (False, ["alice"], 10)
    assert [w.section for w in result.warnings] == ["mention"] and result.failed_closed == []


def test_a_valid_guarded_section_in_a_broken_document_is_kept() -> None:
    result = parse_repo_config("mention:\n  allowedUsers: [alice]\nreview:\n  maxComments: 99\n")
    assert result.config.mention.allowed_users == ["alice"]
    assert [w.section for w in result.warnings] == ["review"] and result.failed_closed == []


def test_merge_keys_and_anchors_still_work() -> None:
    text = "base: &b {allowedUsers: [alice]}\nmention:\n  <<: *b\n  enabled: true\n"
    result = parse_repo_config(text)
    assert result.config.mention.allowed_users == ["alice"] and result.warnings == []


@pytest.mark.parametrize(
    "text",
    [
        "mention:\n  allowedUsers: [alice]\n  allowedUsers: []\n",  # a duplicate key: no last-one-wins
        "mention:\n  allowedUsers: [alice\n",
    ],
)
def test_yaml_tricks_fail_the_whole_file(text: str) -> None:
    with pytest.raises(RepoConfigError, match="YAML parse error"):
        parse_repo_config(text)


def test_an_explicit_empty_allow_list_means_everyone_with_an_advisory() -> None:
    result = parse_repo_config("mention:\n  allowedUsers: []\n")
    assert result.config.mention.allowed_users == [] and result.warnings == []
    assert result.advisories == [
        "mention.allowedUsers is an empty list: everyone may mention the bot (as when it is unset)"
    ]


def test_an_entry_no_login_can_match_gets_an_advisory() -> None:
    result = parse_repo_config('mention:\n  allowedUsers: ["@alice", bob, "dependabot[bot]"]\n')
    assert result.advisories == ["mention.allowedUsers: `@alice` is not a GitHub login, it matches nobody"]


def test_unrelated_typos_in_a_guarded_section_stay_advisories() -> None:
    for text in ("mention:\n  promt: hi\n", "mentions:\n  prompt: hi\n", "mention:\n  foo: 1\n"):
        assert parse_repo_config(text).warnings == [], text


def test_unreadable_web_domains_give_no_web_access() -> None:
    result = parse_repo_config("mention:\n  allowedDomains: docs.python.org\n")
    assert result.config.mention.allowed_domains is None
    assert result.failed_closed == ["mention.allowedDomains: mention runs have no web access"]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("write:\n  enabled: true\n  denyPaths: secrets/\n", id="denyPaths-a-string"),
        pytest.param("write:\n  enabled: true\n  allowPaths: [docs/, 3]\n", id="allowPaths-a-number"),
        pytest.param("write:\n  enabled: true\n  allowForks: 'yes'\n", id="allowForks-a-string"),
        pytest.param("write:\n  enabled: true\n  minIntervalSeconds: -1\n", id="minInterval-negative"),
        pytest.param("write:\n  enabled: true\n  secretScan: false\n", id="secretScan-not-an-object"),
        pytest.param("write:\n  enabled: 'true'\n", id="enabled-a-string"),
        pytest.param("write:\n  enabled: true\n  allowPath: [docs/]\n", id="misspelled-allowPaths"),
        pytest.param("write:\n  enabled: true\n  denypaths: [x/]\n", id="misspelled-denyPaths"),
        pytest.param("write:\n  enabled: true\n  secretScan:\n    enabeld: false\n", id="misspelled-nested"),
        pytest.param("writ:\n  enabled: true\n", id="misspelled-section"),
    ],
)
def test_unreadable_write_settings_turn_write_mode_off(text: str) -> None:
    result = parse_repo_config(text)
    w = result.config.write
    assert w.enabled is False and w.allow_forks is None and w.secret_scan.enabled is True
    assert result.failed_closed == [WRITE_OFF]


def test_a_misspelled_write_key_in_a_valid_file_keeps_the_rest() -> None:
    result = parse_repo_config("write:\n  enabled: true\n  allowPath: [docs/]\n  denyPaths: [x/]\n")
    assert result.config.write.enabled is False and result.config.write.deny_paths == ["x/"]


def test_valid_write_settings_are_untouched() -> None:
    result = parse_repo_config("write:\n  enabled: true\n  allowPaths: [docs/]\n")
    assert result.config.write.enabled is True and result.warnings == []
    assert result.config.write.deny_paths == list(DEFAULT_DENY_PATHS)


@pytest.mark.parametrize(
    ("text", "failed"),
    [
        ("review:\n  autoApprove: 'no'\n", True),
        ("review:\n  autoAprove: false\n", True),
        ("review:\n  autoApprove: false\n  maxComments: 99\n", False),
    ],
)
def test_auto_approve_never_comes_back_on(text: str, failed: bool) -> None:
    result = parse_repo_config(text)
    assert result.config.review.auto_approve is False
    assert result.failed_closed == (["review.autoApprove: clean reviews are not approved"] if failed else [])


def test_review_skip_lists_keep_the_original_fallback() -> None:
    """Not guarded: a reset skip list reviews more, it grants nobody anything."""
    result = parse_repo_config("review:\n  skipAuthors: dependabot\n  maxComments: 3\n")
    assert result.config.review.skip_authors == [] and result.config.review.max_comments == 7
    assert result.failed_closed == [] and [w.section for w in result.warnings] == ["review"]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "knowledge:\n  sharing: true\n",
            "knowledge.sharing.enabled: no retrieval from the owner's other repositories",
        ),
        (
            "knowledge:\n  shareGlobal: 'yes'\n",
            "knowledge.shareGlobal: no global pattern aggregates are written",
        ),
    ],
)
def test_unreadable_knowledge_sharing_stays_off(text: str, line: str) -> None:
    result = parse_repo_config(text)
    assert result.config.knowledge.sharing.enabled is False and result.config.knowledge.share_global is False
    assert result.failed_closed == [line]


def test_a_spend_cap_survives_a_broken_sibling_but_does_not_close() -> None:
    kept = parse_repo_config("telemetry:\n  dailySpendCapUsd: 5\n  costWarningUsd: -1\n")
    assert kept.config.telemetry.daily_spend_cap_usd == 5 and kept.config.telemetry.cost_warning_usd == 0
    bad = parse_repo_config("telemetry:\n  dailySpendCapUsd: five\n")
    assert bad.config.telemetry.daily_spend_cap_usd is None and bad.failed_closed == []
    assert [w.section for w in bad.warnings] == ["telemetry"]


def test_fail_closed_sections_log_their_own_line() -> None:
    result = parse_repo_config("mention:\n  allowedUsers: alice\nmaxTurns: 0\n")
    with capture_logs() as logs:
        log_section_warnings(result, get_logger("kodiai.test"))
    got: list[tuple[Any, ...]] = [(e["event"], e["log_level"], e["section"]) for e in logs]
    assert got == [
        (WARNING_LOG_MESSAGE, "warning", "maxTurns"),
        (FAIL_CLOSED_LOG_MESSAGE, "warning", "mention"),
    ]
    assert logs[1]["failedClosed"] == [USERS]
    assert logs[1]["issues"] == ["allowedUsers: Invalid input: expected array, received string"]


def test_local_review_warnings_say_what_failed_closed(tmp_path: Path) -> None:
    """`kodiai review` prints its config warnings: the fail-closed ones name the safe value in force."""
    git("init", "-q", cwd=tmp_path)
    head = commit_files(tmp_path, {".kodiai.yml": "mention:\n  allowedUsers: alice\n"}, "config")
    config, warnings = load_config_at(tmp_path, head)
    assert config.mention.allowed_users == [NOBODY]
    assert warnings == [
        f"mention: allowedUsers: Invalid input: expected array, received string (failed closed: {USERS})"
    ]
