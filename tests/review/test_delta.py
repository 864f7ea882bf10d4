"""Delta classification: behaviour R4.10 (DC-01…07), the README §3 traps, and the review Q1 fix."""

from __future__ import annotations

from kodiai.review.delta import PriorFinding, classify_finding_deltas, with_canonical_fingerprints
from kodiai.text.fingerprint import bare_fingerprint_finding_title, fingerprint_finding_title


def current(path: str, title: str, severity: str = "major", category: str = "correctness") -> dict:
    return {"file_path": path, "title": title, "severity": severity, "category": category}


def prior(
    path: str, title: str, fp: str | None = None, severity: str = "major", category: str = "correctness"
) -> PriorFinding:
    return PriorFinding(
        file_path=path,
        title=title,
        title_fingerprint=fp if fp is not None else fingerprint_finding_title(title),
        severity=severity,
        category=category,
    )


def counts(result) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    return result.counts.new, result.counts.resolved, result.counts.still_open


def test_4_10_dc_01_no_priors_everything_new() -> None:
    """R4.10 DC-01."""
    r = classify_finding_deltas([current("a.ts", "A"), current("b.ts", "B")], [], fingerprint_finding_title)
    assert [c["delta_status"] for c in r.current] == ["new", "new"]
    assert counts(r) == (2, 0, 0)


def test_4_10_dc_02_matching_prior_is_still_open() -> None:
    """R4.10 DC-02."""
    r = classify_finding_deltas(
        [current("a.ts", "Null deref")], [prior("a.ts", "Null deref")], fingerprint_finding_title
    )
    assert r.current[0]["delta_status"] == "still-open"
    assert counts(r) == (0, 0, 1)


def test_4_10_dc_03_absent_prior_is_resolved() -> None:
    """R4.10 DC-03."""
    r = classify_finding_deltas(
        [],
        [prior("db.ts", "SQL injection", severity="critical", category="security")],
        fingerprint_finding_title,
    )
    assert [x.model_dump() for x in r.resolved] == [
        {"file_path": "db.ts", "title": "SQL injection", "severity": "critical", "category": "security"}
    ]
    assert counts(r) == (0, 1, 0)


def test_4_10_dc_04_mixed_statuses() -> None:
    """R4.10 DC-04: still-open app.ts, new api.ts, resolved db.ts SQL injection."""
    r = classify_finding_deltas(
        [current("app.ts", "Race condition"), current("api.ts", "Missing auth")],
        [prior("app.ts", "Race condition"), prior("db.ts", "SQL injection")],
        fingerprint_finding_title,
    )
    assert [(c["file_path"], c["delta_status"]) for c in r.current] == [
        ("app.ts", "still-open"),
        ("api.ts", "new"),
    ]
    assert [(x.file_path, x.title) for x in r.resolved] == [("db.ts", "SQL injection")]


def test_4_10_dc_05_mixed_counts() -> None:
    """R4.10 DC-05: {new 2, resolved 2, stillOpen 1}."""
    r = classify_finding_deltas(
        [current("a.ts", "Keep"), current("b.ts", "New one"), current("c.ts", "New two")],
        [prior("a.ts", "Keep"), prior("d.ts", "Gone one"), prior("e.ts", "Gone two")],
        fingerprint_finding_title,
    )
    assert counts(r) == (2, 2, 1)


def test_4_10_dc_06_no_current_all_priors_resolved() -> None:
    """R4.10 DC-06."""
    r = classify_finding_deltas([], [prior("a.ts", "One"), prior("b.ts", "Two")], fingerprint_finding_title)
    assert [x.title for x in r.resolved] == ["One", "Two"]


def test_4_10_dc_07_matching_goes_through_fingerprint_fn() -> None:
    """R4.10 DC-07: differently cased titles share a fingerprint → still-open."""
    r = classify_finding_deltas(
        [current("a.ts", "NULL POINTER dereference")],
        [prior("a.ts", "null pointer Dereference")],
        fingerprint_finding_title,
    )
    assert r.current[0]["delta_status"] == "still-open"


def test_trap_duplicate_prior_key_keeps_first_position_last_value() -> None:
    """JS Map: a repeated key keeps its first position and takes the last value."""
    r = classify_finding_deltas(
        [],
        [prior("a.ts", "X", severity="minor"), prior("b.ts", "Y"), prior("a.ts", "X", severity="critical")],
        fingerprint_finding_title,
    )
    assert [(x.file_path, x.severity) for x in r.resolved] == [("a.ts", "critical"), ("b.ts", "major")]


def test_current_entries_keep_their_fields() -> None:
    r = classify_finding_deltas([{**current("a.ts", "A"), "comment_id": 5}], [], fingerprint_finding_title)
    assert r.current[0]["comment_id"] == 5


def test_q1_original_forms_never_match() -> None:
    """X-06 / review Q1 as in the original: a bare-hex prior looked up with the fp- form never matches."""
    bare = prior("a.ts", "Null deref", fp=bare_fingerprint_finding_title("Null deref"))
    r = classify_finding_deltas([current("a.ts", "Null deref")], [bare], fingerprint_finding_title)
    assert counts(r) == (1, 1, 0)


def test_q1_fix_canonical_fingerprints_match_old_bare_rows() -> None:
    """PARITY.md review Q1 fix: priors normalised to the fp- form match, bare-hex rows from an old DB included."""
    old = prior("a.ts", "Null deref", fp=bare_fingerprint_finding_title("Null deref"))
    new = prior("b.ts", "Leak", fp=fingerprint_finding_title("Leak"))
    priors = with_canonical_fingerprints([old, new])
    assert [p.title_fingerprint for p in priors] == [
        fingerprint_finding_title("Null deref"),
        fingerprint_finding_title("Leak"),
    ]
    r = classify_finding_deltas(
        [current("a.ts", "null DEREF"), current("b.ts", "Leak")], priors, fingerprint_finding_title
    )
    assert counts(r) == (0, 0, 2)
