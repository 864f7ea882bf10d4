"""GitHub logins compared as the original compares them: the review trigger (is a requested reviewer this
app?) and feedback sync (is a reaction the app's own?) use the same form."""

from __future__ import annotations

from kodiai.compat.js import js_trim


def normalize_login(login: str) -> str:
    """Trim, lowercase, drop a trailing ``[bot]``: ``KoDiAi[BoT]`` → ``kodiai``."""
    value = js_trim(login).lower()
    return value[: -len("[bot]")] if value.endswith("[bot]") else value
