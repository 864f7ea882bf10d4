"""behaviour R4.12 (breaking-change extraction, DE-15…DE-21) and its JS traps."""

from __future__ import annotations

from kodiai.review.dep_bumps.enrichment import ReleaseNote, extract_breaking_changes


def _notes(*bodies: str) -> list[ReleaseNote]:
    return [ReleaseNote(body=b) for b in bodies]


def test_de_15_breaking_change_marker_and_text() -> None:
    assert extract_breaking_changes(_notes("Intro\nBREAKING CHANGE: removed deprecated API")) == [
        "BREAKING CHANGE: removed deprecated API"
    ]


def test_de_16_plural_marker() -> None:
    assert extract_breaking_changes(_notes("BREAKING CHANGES:\n- Removed X")) == [
        "BREAKING CHANGES:\n- Removed X"
    ]


def test_de_17_breaking_heading_with_next_lines() -> None:
    snippet = extract_breaking_changes(
        _notes("Notes\n## Breaking Changes\n- Dropped Node 14\n- more\n- hidden")
    )
    assert snippet == ["## Breaking Changes\n- Dropped Node 14\n- more"]


def test_de_18_bold_breaking() -> None:
    assert extract_breaking_changes(_notes("Fixes\n**Breaking** the config format changed")) == [
        "**Breaking** the config format changed"
    ]


def test_de_19_no_markers() -> None:
    assert extract_breaking_changes(_notes("Bug fixes only", "Performance work")) == []


def test_de_20_identical_snippets_deduplicated() -> None:
    assert len(extract_breaking_changes(_notes("BREAKING CHANGE: x", "BREAKING CHANGE: x"))) == 1


def test_de_21_snippet_is_at_most_200_characters() -> None:
    (snippet,) = extract_breaking_changes(_notes("BREAKING CHANGE: " + "x" * 500))
    assert len(snippet) == 200


def test_first_marker_in_order_wins_and_incompatible_counts() -> None:
    assert extract_breaking_changes(_notes("INCOMPATIBLE change\nBREAKING CHANGE: later")) == [
        "BREAKING CHANGE: later"
    ]
    assert extract_breaking_changes(_notes("Bug fixes:\n- x\nincompatible with v1")) == [
        "incompatible with v1"
    ]


def test_trap_snippet_starts_at_the_first_occurrence_of_the_matched_text() -> None:
    """An ``indexOf`` of the matched text, which can come before the regex match: ``see ## Breaking``."""
    body = "see ## Breaking notes below\n## Breaking\n- removed"
    assert extract_breaking_changes(_notes(body)) == ["## Breaking notes below\n## Breaking\n- removed"]


def test_trap_breaking_markers_fold_ascii_only() -> None:
    """``BREAK\\u212aING`` (Kelvin sign) does not match in JS; Python's Unicode /i would match it."""
    assert extract_breaking_changes(_notes("BREAK\u212aING CHANGE: x")) == []
    assert extract_breaking_changes(_notes("INCOMPATIBLEé")) == ["INCOMPATIBLEé"], "ASCII \\b after E"


def test_trap_heading_marker_uses_js_multiline_caret() -> None:
    """JS multiline ``^`` matches after ``\\r``; the snippet is cut at ``\\n`` only."""
    assert extract_breaking_changes(_notes("x\r# Breaking\nnext")) == ["# Breaking\nnext"]
