"""Title fingerprints (behaviour R0.1) and the one-form rule of PARITY.md review Q1."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kodiai.text.fingerprint import (
    bare_fingerprint_finding_title,
    fingerprint_finding_title,
    fingerprint_variants,
    normalize_fingerprint,
)
from support.vectors import cases, ids

ROWS = cases("functions.jsonl", "fingerprint_finding_title")


def test_every_vector_row_is_loaded() -> None:
    assert len(ROWS) == 200


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_fingerprint_vectors(row: dict) -> None:
    assert fingerprint_finding_title(**row["args"]) == row["expected"]


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Unused variable detected", "fp-286fe3ed"),
        ("**Guard against undefined payload**", "fp-e36e8e33"),
        ("SQL injection in raw query path", "fp-96353bde"),
        ("", "fp-811c9dc5"),
    ],
)
def test_0_1_spec_examples(title: str, expected: str) -> None:
    """R0.1: the four worked examples of the spec."""
    assert fingerprint_finding_title(title) == expected


def test_0_1_no_second_trim_keeps_edge_spaces_in_hash() -> None:
    """R0.1: leading/trailing punctuation becomes a space that is hashed (no second trim)."""
    assert fingerprint_finding_title("**x**") != fingerprint_finding_title("x")
    assert fingerprint_finding_title("  x  ") == fingerprint_finding_title("x")


def test_0_1_js_trim_whitespace_set() -> None:
    """R0.1: the first trim is JS ``trim`` (U+FEFF trimmed; U+0085 is not whitespace, becomes a space)."""
    assert fingerprint_finding_title("\ufeffabc") == fingerprint_finding_title("abc")
    assert fingerprint_finding_title("\x85abc") == fingerprint_finding_title("-abc")
    assert fingerprint_finding_title("\x85abc") != fingerprint_finding_title("abc")


def test_0_1_case_and_punctuation_runs_collapse() -> None:
    assert fingerprint_finding_title("SQL -- Injection!!") == fingerprint_finding_title("sql injection!")


def test_bare_variant_is_hash_without_prefix() -> None:
    assert bare_fingerprint_finding_title("Unused variable detected") == "286fe3ed"


def test_q1_bare_rows_normalise_to_fp_form() -> None:
    """PARITY.md review Q1 fix: a bare-hex row from an older database maps to the one fp- form."""
    assert normalize_fingerprint("286fe3ed") == "fp-286fe3ed"
    assert normalize_fingerprint("fp-286fe3ed") == "fp-286fe3ed"
    assert normalize_fingerprint("not-a-fingerprint") == "not-a-fingerprint"
    assert fingerprint_variants("286fe3ed") == ("fp-286fe3ed", "286fe3ed")
    assert fingerprint_variants("fp-286fe3ed") == ("fp-286fe3ed", "286fe3ed")


@given(st.text(max_size=80))
def test_property_form_and_normalisation_invariance(title: str) -> None:
    """Always `fp-` + 8 lowercase hex; case and punctuation runs never change the fingerprint."""
    fp = fingerprint_finding_title(title)
    assert re.fullmatch(r"fp-[0-9a-f]{8}", fp)
    ascii_title = title.encode("ascii", "ignore").decode()
    assert fingerprint_finding_title(ascii_title.upper()) == fingerprint_finding_title(ascii_title.lower())
    assert fingerprint_finding_title(title.replace(" ", " -- ")) == fingerprint_finding_title(
        title.replace(" ", "!")
    )
    assert normalize_fingerprint(bare_fingerprint_finding_title(title)) == fp
