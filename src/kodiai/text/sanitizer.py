"""Content sanitisation for text that reaches the model or is posted (behaviour R2.19, behaviour E3.18).

:func:`sanitize_content` neutralises prompt-injection carriers (HTML comments, invisible characters,
hidden markdown/HTML text, numeric entities) and redacts GitHub tokens. :func:`sanitize_outgoing_mentions`
defuses ``@handle`` self-mentions in bodies the bot posts. The regexes reproduce the original's JS
semantics: ``\\s`` is the JS whitespace set, ``\\b`` is ASCII.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from kodiai.compat.js import JS_NOT_S, JS_S

REDACTED_TOKEN = "[REDACTED_GITHUB_TOKEN]"

_HTML_COMMENT = re.compile(r"<!--[\s\S]*?-->")
_INVISIBLE = re.compile(
    "[\u200b\u200c\u200d\ufeff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u202a-\u202e\u2066-\u2069]"
)
_IMAGE_ALT = re.compile(r"!\[[^\]]*\]\(")
_LINK_TITLES = tuple(
    re.compile(r"(\[[^\]]*\]\([^)]+)" + JS_S + "+" + quoted) for quoted in (r'"[^"]*"', r"'[^']*'")
)
# Each attribute is removed with the one whitespace character before it: first a quoted value (either
# quote character may close it), then an unquoted one; attributes are handled in this order.
_HIDDEN_ATTRIBUTE_NAMES = ("alt", "title", "aria-label", "data-[a-zA-Z0-9-]+", "placeholder")
_HIDDEN_ATTRIBUTES = tuple(
    re.compile(JS_S + name + JS_S + "*=" + JS_S + "*" + value, re.IGNORECASE | re.ASCII)
    for name in _HIDDEN_ATTRIBUTE_NAMES
    for value in (r"[\"'][^\"']*[\"']", JS_NOT_S[:-1] + ">]+")
)
_DEC_ENTITY = re.compile(r"&#([0-9]+);")
_HEX_ENTITY = re.compile(r"&#x([0-9a-fA-F]+);")
_CLASSIC_TOKEN = re.compile(r"\b(?:ghp|gho|ghs|ghr)_[A-Za-z0-9]{36}\b", re.ASCII)
_FINE_GRAINED_TOKEN = re.compile(r"\bgithub_pat_[A-Za-z0-9_]{11,221}\b", re.ASCII)


def strip_html_comments(text: str) -> str:
    """Remove ``<!-- … -->`` comments (non-greedy, across lines)."""
    return _HTML_COMMENT.sub("", text)


def strip_invisible_characters(text: str) -> str:
    """Remove zero-width characters, the BOM, C0/C1 controls except tab/LF/CR, soft hyphens and bidi controls."""
    return _INVISIBLE.sub("", text)


def strip_markdown_image_alt_text(text: str) -> str:
    """``![anything](`` → ``![](``."""
    return _IMAGE_ALT.sub("![](", text)


def strip_markdown_link_titles(text: str) -> str:
    """``[t](url "title")`` / ``[t](url 'title')`` → ``[t](url)`` (double-quoted titles first)."""
    for pattern in _LINK_TITLES:
        text = pattern.sub(lambda m: m.group(1), text)
    return text


def strip_hidden_attributes(text: str) -> str:
    """Remove ``alt``, ``title``, ``aria-label``, ``data-*`` and ``placeholder`` attributes (quoted or unquoted,
    case-insensitive) together with the whitespace character before each."""
    for pattern in _HIDDEN_ATTRIBUTES:
        text = pattern.sub("", text)
    return text


def _printable_or_empty(code_text: str, base: int) -> str:
    if len(code_text) > 8:  # far outside 32..126; avoids int() on huge digit strings
        return ""
    code = int(code_text, base)
    return chr(code) if 32 <= code <= 126 else ""


def normalize_html_entities(text: str) -> str:
    """Decode numeric entities in the printable ASCII range 32–126; drop every other numeric entity."""
    text = _DEC_ENTITY.sub(lambda m: _printable_or_empty(m.group(1), 10), text)
    return _HEX_ENTITY.sub(lambda m: _printable_or_empty(m.group(1), 16), text)


def redact_github_tokens(text: str) -> str:
    """Replace ``ghp_/gho_/ghs_/ghr_`` + 36 alphanumerics and ``github_pat_`` + 11–221 word characters."""
    text = _CLASSIC_TOKEN.sub(REDACTED_TOKEN, text)
    return _FINE_GRAINED_TOKEN.sub(REDACTED_TOKEN, text)


def sanitize_content(content: str) -> str:
    """Apply the seven sanitisation steps in the original's order."""
    text = strip_html_comments(content)
    text = strip_invisible_characters(text)
    text = strip_markdown_image_alt_text(text)
    text = strip_markdown_link_titles(text)
    text = strip_hidden_attributes(text)
    text = normalize_html_entities(text)
    return redact_github_tokens(text)


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement function (no backslash interpretation, unlike a replacement string)."""
    return lambda _match: text


def sanitize_outgoing_mentions(body: str, handles: Iterable[str]) -> str:
    """Replace every case-insensitive ``@handle`` followed by an ASCII word boundary with the handle as given.

    A leading ``@`` on a handle is ignored and an empty handle is skipped, so ``@Kodiai`` becomes ``kodiai``
    for the handle ``kodiai`` while ``@kodiaibot`` is left alone.
    """
    for raw in handles:
        handle = raw[1:] if raw.startswith("@") else raw
        if not handle:
            continue
        pattern = re.compile("@" + re.escape(handle) + r"\b", re.IGNORECASE | re.ASCII)
        body = pattern.sub(_literal(handle), body)
    return body


C = TypeVar("C")


def _field(comment: Any, name: str) -> Any:
    if isinstance(comment, Mapping):
        return comment.get(name)
    return getattr(comment, name, None)


def _as_time(value: Any) -> float | None:
    """Epoch seconds of an ISO string or datetime (naive = UTC); None when unparseable (JS NaN)."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def filter_comments_to_trigger_time(
    comments: Sequence[C], trigger_time: str | datetime | None = None
) -> list[C]:
    """Keep comments created and (when present) updated strictly before the trigger (TOCTOU guard).

    No trigger keeps everything. Like JS ``Date`` comparisons, an unparseable date compares false and is kept.
    """
    if trigger_time is None or trigger_time == "":
        return list(comments)
    trigger = _as_time(trigger_time)
    if trigger is None:
        return list(comments)
    kept = []
    for comment in comments:
        created = _as_time(_field(comment, "created_at"))
        if created is not None and created >= trigger:
            continue
        updated = _as_time(_field(comment, "updated_at"))
        if updated is not None and updated >= trigger:
            continue
        kept.append(comment)
    return kept
