"""Prior-finding dedup: behaviour R4.15 (FD-01…05) and the review Q1 fix."""

from __future__ import annotations

from kodiai.review.dedup import build_prior_finding_context, should_suppress_finding
from kodiai.review.delta import PriorFinding, with_canonical_fingerprints
from kodiai.text.fingerprint import bare_fingerprint_finding_title, fingerprint_finding_title


def prior(path: str, fp: str, title: str = "t") -> PriorFinding:
    return PriorFinding(
        file_path=path,
        title=title,
        title_fingerprint=fp,
        severity="major",
        category="correctness",
        start_line=3,
        end_line=None,
        comment_id=11,
    )


def test_4_15_fd_01_no_priors() -> None:
    """R4.15 FD-01."""
    ctx = build_prior_finding_context([], ["a.ts"])
    assert ctx.unresolved_on_unchanged_code == [] and ctx.suppression_fingerprints == set()


def test_4_15_fd_02_unchanged_file_kept_deep_equal() -> None:
    """R4.15 FD-02."""
    p = prior("lib/util.ts", "abc12345")
    ctx = build_prior_finding_context([p], ["src/other.ts"])
    assert ctx.unresolved_on_unchanged_code == [p]


def test_4_15_fd_03_changed_files_excluded() -> None:
    """R4.15 FD-03."""
    ctx = build_prior_finding_context([prior("a.ts", "1"), prior("b.ts", "2")], ["a.ts", "b.ts"])
    assert ctx.unresolved_on_unchanged_code == [] and ctx.suppression_fingerprints == set()


def test_4_15_fd_04_fingerprint_key_form() -> None:
    """R4.15 FD-04: `<path>:<titleFingerprint>` for findings on unchanged files only."""
    ctx = build_prior_finding_context([prior("a.ts", "fp1"), prior("b.ts", "fp2")], ["b.ts"])
    assert ctx.suppression_fingerprints == {"a.ts:fp1"}


def test_4_15_fd_05_should_suppress_finding() -> None:
    """R4.15 FD-05."""
    keys = {"a.ts:fp1"}
    assert should_suppress_finding("a.ts", "fp1", keys) is True
    assert should_suppress_finding("a.ts", "fp2", keys) is False
    assert should_suppress_finding("b.ts", "fp1", keys) is False
    assert should_suppress_finding("a.ts", "fp1", set()) is False


def test_q1_original_bare_keys_miss_fp_lookups() -> None:
    """X-06 / review Q1 as in the original: bare-hex context keys never match an fp- lookup."""
    ctx = build_prior_finding_context([prior("a.ts", bare_fingerprint_finding_title("Leak"))], [])
    assert (
        should_suppress_finding("a.ts", fingerprint_finding_title("Leak"), ctx.suppression_fingerprints)
        is False
    )


def test_q1_fix_canonical_priors_match() -> None:
    """PARITY.md review Q1 fix: with canonical priors the fp- lookup suppresses the repeated finding."""
    priors = with_canonical_fingerprints([prior("a.ts", bare_fingerprint_finding_title("Leak"))])
    ctx = build_prior_finding_context(priors, [])
    assert (
        should_suppress_finding("a.ts", fingerprint_finding_title("Leak"), ctx.suppression_fingerprints)
        is True
    )
