"""``review.pathInstructions`` matching and the ``## Path-Specific Review Instructions`` section (R2.32 item 23)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kodiai.compat.glob import glob_match
from kodiai.compat.js import js_trim, utf16_len

from .context import PathInstructionMatch, PromptView

MAX_PATH_INSTRUCTIONS_CHARS = 3000
MAX_FILES_SHOWN = 5
TRUNCATION_NOTE = "_Note: Additional path instructions were truncated due to prompt size limits._"
_WILDCARDS = frozenset("*?[]{}")


class PathInstructionEntry(PromptView):
    """A ``review.pathInstructions`` entry as configured (reads a config model or a dict)."""

    path: str | list[str]
    instructions: str


def _patterns(path: str | list[str]) -> list[str]:
    raw = [path] if isinstance(path, str) else path
    return [p for p in (js_trim(item) for item in raw) if p]


def _split_negations(patterns: Iterable[str]) -> tuple[list[str], list[str]]:
    """Includes and excludes; a leading ``!`` (not an extglob ``!(``) marks an exclude, as picomatch scan does."""
    includes: list[str] = []
    excludes: list[str] = []
    for pattern in patterns:
        if pattern.startswith("!") and not pattern.startswith("!("):
            if pattern[1:]:
                excludes.append(pattern[1:])
        else:
            includes.append(pattern)
    return includes, excludes


def match_path_instructions(
    instructions: Sequence[object], files: Sequence[str]
) -> list[PathInstructionMatch]:
    """Entries with the changed files they apply to; entries that match nothing are dropped.

    A file matches when some include pattern matches (every file, when there are only excludes) and no
    exclude matches. Entries are matched independently, so one file can match several entries.
    """
    matches: list[PathInstructionMatch] = []
    for raw in instructions:
        entry = PathInstructionEntry.model_validate(raw)
        includes, excludes = _split_negations(_patterns(entry.path))
        matched = [
            f
            for f in files
            if (not includes or any(glob_match(p, f) for p in includes))
            and not any(glob_match(p, f) for p in excludes)
        ]
        if matched:
            matches.append(
                PathInstructionMatch(path=entry.path, instructions=entry.instructions, matched_files=matched)
            )
    return matches


def _specificity(path: str | list[str]) -> int:
    total = 0
    for pattern in [path] if isinstance(path, str) else path:
        wildcards = sum(1 for ch in pattern if ch in _WILDCARDS)
        total += max(0, utf16_len(pattern) - 5 * wildcards)
    return total


def _label(path: str | list[str]) -> str:
    text = path if isinstance(path, str) else ", ".join(path)
    # A pattern ending in ``**`` already closes the bold markup visually, so no closing ``**`` is added.
    return f"**{text}" if text.endswith("**") else f"**{text}**"


def _block(match: PathInstructionMatch) -> str:
    shown = ", ".join(match.matched_files[:MAX_FILES_SHOWN])
    extra = len(match.matched_files) - MAX_FILES_SHOWN
    if extra > 0:
        shown += f" (and {extra} more)"
    return f"{_label(match.path)} (applies to: {shown})\n{js_trim(match.instructions)}\n\n"


def build_path_instructions_section(
    matches: Sequence[PathInstructionMatch], max_chars: int = MAX_PATH_INSTRUCTIONS_CHARS
) -> str:
    """Blocks ranked by ``matched files × 1000 + specificity`` (stable), cut to fit ``max_chars``."""
    if not matches:
        return ""
    ranked = sorted(matches, key=lambda m: -(len(m.matched_files) * 1000 + _specificity(m.path)))
    text = "## Path-Specific Review Instructions\n\n"
    budget = max_chars - (utf16_len(TRUNCATION_NOTE) + 2)
    truncated = False
    for match in ranked:
        block = _block(match)
        if utf16_len(text) + utf16_len(block) > budget:
            truncated = True
            break
        text += block
    if truncated and utf16_len(text) + utf16_len(TRUNCATION_NOTE) + 2 <= max_chars:
        text += TRUNCATION_NOTE
    return text.rstrip("\n")
