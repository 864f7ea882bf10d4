"""Error classification and error comments: behaviour R4.13 (ER-01…19) = behaviour E5.8 (#120–138),
plus the JS traps of parity-vectors/README.md §3 for classify_error / format_error_comment."""

from __future__ import annotations

import pytest

from kodiai.execution.errors import HEADERS, classify_error, error_message, format_error_comment

ALL_CATEGORIES = ["timeout", "timeout_partial", "api_error", "config_error", "clone_error", "internal_error"]
GHS = "ghs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GHP = "ghp_" + "Z" * 36


class HttpError(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.name = "HttpError"
        self.status = status


@pytest.mark.parametrize(
    "error",
    [
        Exception("Failed to clone repository"),
        Exception("Invalid .kodiai.yml"),
        Exception("boom"),
        "string error",
        None,
    ],
)
def test_4_13_er_01_timeout_wins_whatever_the_message(error: object) -> None:
    """R4.13 ER-01 / behaviour E5.8 #120: isTimeout gives timeout for any message, strings and null included."""
    assert classify_error(error, True) == "timeout"
    assert classify_error(error, True, False) == "timeout"


def test_4_13_er_02_timeout_and_published_is_partial() -> None:
    """R4.13 ER-02 / exec #121."""
    assert classify_error(Exception("whatever"), True, True) == "timeout_partial"


def test_4_13_er_03_kodiai_yml_is_config_error() -> None:
    """R4.13 ER-03 / exec #122."""
    assert classify_error(Exception("Invalid .kodiai.yml: parse error"), False) == "config_error"


@pytest.mark.parametrize("message", ["Failed to clone repository", "Clone operation timed out"])
def test_4_13_er_04_clone_messages(message: str) -> None:
    """R4.13 ER-04 / exec #123."""
    assert classify_error(Exception(message), False) == "clone_error"


@pytest.mark.parametrize("message", ["git fetch failed", "Git authentication error"])
def test_4_13_er_05_git_messages(message: str) -> None:
    """R4.13 ER-05 / exec #124."""
    assert classify_error(Exception(message), False) == "clone_error"


def test_4_13_er_06_rate_limit_beats_git() -> None:
    """R4.13 ER-06 / exec #125: api_error is checked before clone_error."""
    assert classify_error(Exception("GitHub rate limit exceeded"), False) == "api_error"


def test_4_13_er_07_api_request_failed() -> None:
    """R4.13 ER-07 / exec #126."""
    assert classify_error(Exception("API request failed"), False) == "api_error"


@pytest.mark.parametrize("message", ["Request failed with status 403", "Server returned 500"])
def test_4_13_er_08_status_numbers(message: str) -> None:
    """R4.13 ER-08 / exec #127."""
    assert classify_error(HttpError(message), False) == "api_error"


def test_4_13_er_09_otherwise_internal() -> None:
    """R4.13 ER-09 / exec #128."""
    assert classify_error(Exception("something unexpected happened"), False) == "internal_error"


@pytest.mark.parametrize("value", ["string error", 42, None])
def test_4_13_er_10_non_error_values_are_internal(value: object) -> None:
    """R4.13 ER-10 / exec #129: non-Error values (string, number, null) → internal_error."""
    assert classify_error(value, False) == "internal_error"


@pytest.mark.parametrize("category", ALL_CATEGORIES)
def test_4_13_er_11_every_category_renders_header_and_detail(category: str) -> None:
    """R4.13 ER-11 / exec #130: `> **<Header>**` and `_test detail_` with the exact header texts."""
    body = format_error_comment(category, "test detail")
    assert body.startswith(f"> **{HEADERS[category]}**\n\n_test detail_\n\n")
    assert HEADERS == {
        "timeout": "Kodiai timed out",
        "timeout_partial": "Kodiai completed a partial review",
        "api_error": "Kodiai encountered an API error",
        "config_error": "Kodiai found a configuration problem",
        "clone_error": "Kodiai couldn't access the repository",
        "internal_error": "Kodiai encountered an error",
    }


@pytest.mark.parametrize(
    ("checklist", "category", "words"),
    [
        ("ER-12", "timeout", ["smaller pieces", "`.kodiai.yml`"]),
        ("ER-13", "timeout_partial", ["partial review", "inline comments"]),
        ("ER-14", "api_error", ["temporary", "few minutes"]),
        ("ER-15", "config_error", ["`.kodiai.yml`", "syntax or schema"]),
        ("ER-16", "clone_error", ["accessible", "branch exists"]),
        ("ER-17", "internal_error", ["persists", "report"]),
    ],
)
def test_4_13_er_12_to_17_suggestion_wording(checklist: str, category: str, words: list[str]) -> None:
    """R4.13 ER-12…ER-17 / exec #131–136: each suggestion carries the asserted words."""
    body = format_error_comment(category, "d")
    for word in words:
        assert word in body, (checklist, word)


def test_4_13_er_18_ghs_token_redacted() -> None:
    """R4.13 ER-18 / exec #137."""
    body = format_error_comment("internal_error", f"token {GHS} leaked")
    assert GHS not in body
    assert "_token [REDACTED_GITHUB_TOKEN] leaked_" in body


def test_4_13_er_19_ghp_and_ghs_both_redacted() -> None:
    """R4.13 ER-19 / exec #138."""
    body = format_error_comment("api_error", f"{GHP} and {GHS}")
    assert body.count("[REDACTED_GITHUB_TOKEN]") == 2
    assert "ghp_" not in body and "ghs_" not in body


# --- JS traps (parity-vectors/README.md §3, classify_error / format_error_comment) -----------------------


def test_trap_api_matches_inside_words_case_insensitively() -> None:
    """JS /API/i matches inside `rapid` and `capital`."""
    assert classify_error("rapid growth", False) == "api_error"
    assert classify_error("capital letters", False) == "api_error"


def test_trap_git_matches_inside_words() -> None:
    """`git` matches inside `Digit` and `legitimate` (→ clone_error)."""
    assert classify_error("Digit overflow", False) == "clone_error"
    assert classify_error("legitimate failure", False) == "clone_error"


def test_trap_dotted_capital_i_is_not_git_in_js() -> None:
    """JS /i without `u` does not fold `İ` to `i`: `GİT` is not clone_error (Python re.I would say it is)."""
    assert classify_error("GİT exploded", False) == "internal_error"


def test_trap_status_number_uses_ascii_digits_and_boundaries() -> None:
    """`\\b[45]\\d{2}\\b` is ASCII: `é404` has a boundary before 4 in JS; Arabic-Indic `٤٠٤` is not a number."""
    assert classify_error("é404", False) == "api_error"
    assert classify_error("HTTP ٤٠٤", False) == "internal_error"
    assert classify_error("error 4040", False) == "internal_error"
    assert classify_error("error 600", False) == "internal_error"


def test_trap_config_error_is_case_sensitive() -> None:
    assert classify_error(".KODIAI.YML broken", False) == "internal_error"


def test_trap_non_error_values_use_js_string() -> None:
    """A non-Error goes through JS String(): null → "null", 42 → "42", 1.0 → "1", True → "true"."""
    assert error_message(None) == "null"
    assert error_message(42) == "42"
    assert error_message(1.0) == "1"
    assert error_message(True) == "true"
    assert error_message({"message": "API"}) == "[object Object]"
    assert classify_error(500, False) == "api_error"


def test_trap_token_redaction_uses_ascii_word_boundary() -> None:
    """`ghp_`+36 followed by `é` is redacted (é is not an ASCII word char); 37 characters are not."""
    token = "ghp_" + "a" * 36
    assert format_error_comment("timeout", token + "é").count("[REDACTED_GITHUB_TOKEN]é") == 1
    assert "[REDACTED" not in format_error_comment("timeout", "ghp_" + "a" * 37)


def test_trap_fine_grained_token_length_bounds_and_ghu_never() -> None:
    """`github_pat_` takes 11–221 characters; `ghu_` is never redacted."""
    assert "[REDACTED_GITHUB_TOKEN]" in format_error_comment("timeout", "github_pat_" + "b" * 221)
    assert "[REDACTED" not in format_error_comment("timeout", "github_pat_" + "b" * 222)
    assert "[REDACTED" not in format_error_comment("timeout", "github_pat_" + "b" * 10)
    assert "[REDACTED" not in format_error_comment("timeout", "ghu_" + "e" * 36)


def test_format_error_comment_exact_layout() -> None:
    assert format_error_comment("api_error", "Secondary rate limit") == (
        "> **Kodiai encountered an API error**\n\n_Secondary rate limit_\n\n"
        "This is usually temporary. Try again in a few minutes."
    )


def test_trap_unknown_category_interpolates_js_undefined() -> None:
    """A category outside the table renders JS `undefined` for header and suggestion, as the template did."""
    assert format_error_comment("bogus", "d") == "> **undefined**\n\n_d_\n\nundefined"
