"""P4.2 branch-name validation: each rule, in the original's order, with its own message."""

from __future__ import annotations

import pytest

from kodiai.github.branch_names import InvalidBranchNameError, validate_branch_name


@pytest.mark.parametrize(
    "name", ["main", "feature/x-1", "release/1.2.3", "a_b", "9lives", "dependabot/npm/x.y"]
)
def test_4_2_valid_names(name: str) -> None:
    assert validate_branch_name(name) == name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("-rf", "must not start with '-'"),
        ("a\x00b", "control characters"),
        ("a\x7fb", "control characters"),
        ("a~b", "forbidden characters"),
        ("a^b", "forbidden characters"),
        ("a:b", "forbidden characters"),
        ("a?b", "forbidden characters"),
        ("a*b", "forbidden characters"),
        ("a[b", "forbidden characters"),
        ("a\\b", "forbidden characters"),
        (".hidden", "must start with a letter or digit"),
        ("_x", "must start with a letter or digit"),
        ("é", "must start with a letter or digit"),
        ("a+b", "may only contain"),
        ("a@b", "may only contain"),
        ("a#b", "may only contain"),
        ("a,b", "may only contain"),
        ("naïve", "may only contain"),
        ("a b", "may only contain"),
        ("a..b", "must not contain '..'"),
        ("a.lock", "must not end with '.lock'"),
        ("a/", "must not end with '/'"),
        ("a//b", "must not contain '//'"),
    ],
)
def test_4_2_invalid_names(name: str, message: str) -> None:
    """P4.2: rules 1–11 checked in order (so `a@{b` fails the alphabet rule before the `@{` rule)."""
    with pytest.raises(InvalidBranchNameError, match=message.replace("?", r"\?").replace(".", r"\.")):
        validate_branch_name(name)
