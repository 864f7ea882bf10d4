"""Error classification and the user-visible error comment (behaviour E4, behaviour R2.18, R3.6)."""

from __future__ import annotations

import re
from typing import Any, Literal

from kodiai.compat.js import js_number_to_string
from kodiai.text.sanitizer import redact_github_tokens

ErrorCategory = Literal[
    "timeout", "timeout_partial", "api_error", "config_error", "clone_error", "internal_error"
]

HEADERS: dict[str, str] = {
    "timeout": "Kodiai timed out",
    "timeout_partial": "Kodiai completed a partial review",
    "api_error": "Kodiai encountered an API error",
    "config_error": "Kodiai found a configuration problem",
    "clone_error": "Kodiai couldn't access the repository",
    "internal_error": "Kodiai encountered an error",
}

SUGGESTIONS: dict[str, str] = {
    "timeout": "Try breaking the task into smaller pieces, or increase `timeoutSeconds` in `.kodiai.yml`.",
    "timeout_partial": (
        "Some inline comments were posted above. To get a full review, increase `timeoutSeconds` in "
        "`.kodiai.yml` or break the PR into smaller changes."
    ),
    "api_error": "This is usually temporary. Try again in a few minutes.",
    "config_error": "Check your `.kodiai.yml` file for syntax or schema errors.",
    "clone_error": "Verify the repository is accessible and the branch exists.",
    "internal_error": "If this persists, please report this issue.",
}

# JS regexes without the `u` flag: ASCII \b and \d, and /i folds ASCII letters only ("GİT" is not "git").
_API_ERROR = re.compile(r"rate limit|API|\b[45]\d{2}\b", re.IGNORECASE | re.ASCII)
_CLONE_ERROR = re.compile(r"clone|git", re.IGNORECASE | re.ASCII)


def js_string(value: Any) -> str:
    """JS ``String(value)`` for the values an error path can carry."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number_to_string(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None else js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def error_message(error: object) -> str:
    """``err.message`` for exceptions, JS ``String(err)`` for anything else."""
    if isinstance(error, BaseException):
        return str(error)
    return js_string(error)


def classify_error(error: object, is_timeout: bool, published: bool | None = None) -> ErrorCategory:
    """Classify a failure; the first rule that matches wins (behaviour E4).

    timeout+published → ``timeout_partial``; timeout → ``timeout``; message containing ``.kodiai.yml``
    (case-sensitive) → ``config_error``; ``rate limit``/``API``/a standalone 400–599 number
    (case-insensitive, checked before clone) → ``api_error``; ``clone``/``git`` anywhere → ``clone_error``;
    otherwise ``internal_error``.
    """
    if is_timeout and published:
        return "timeout_partial"
    if is_timeout:
        return "timeout"
    message = error_message(error)
    if ".kodiai.yml" in message:
        return "config_error"
    if _API_ERROR.search(message):
        return "api_error"
    if _CLONE_ERROR.search(message):
        return "clone_error"
    return "internal_error"


def format_error_comment(category: str, detail: str) -> str:
    """``> **<header>**``, blank line, ``_<redacted detail>_``, blank line, the suggestion."""
    header = HEADERS.get(category, "undefined")
    suggestion = SUGGESTIONS.get(category, "undefined")
    return f"> **{header}**\n\n_{redact_github_tokens(detail)}_\n\n{suggestion}"
