"""Language classification of changed files by extension (behaviour R2.3).

The "extension" is whatever follows the last ``.`` of the whole path, lowercased (JS
``path.split(".").pop().toLowerCase()``): ``dir.d/file`` has the extension ``d/file``, a path without a dot
uses all of itself (so a root file named ``go`` is Go), and ``file.`` has an empty extension.
"""

from __future__ import annotations

from collections.abc import Iterable

UNKNOWN_LANGUAGE = "Unknown"

EXTENSION_LANGUAGE_MAP: dict[str, str] = {
    "ts": "TypeScript",
    "tsx": "TypeScript",
    "mts": "TypeScript",
    "cts": "TypeScript",
    "js": "JavaScript",
    "jsx": "JavaScript",
    "mjs": "JavaScript",
    "cjs": "JavaScript",
    "py": "Python",
    "pyw": "Python",
    "go": "Go",
    "rs": "Rust",
    "java": "Java",
    "kt": "Kotlin",
    "kts": "Kotlin",
    "swift": "Swift",
    "cs": "C#",
    "cpp": "C++",
    "cc": "C++",
    "cxx": "C++",
    "hpp": "C++",
    "hxx": "C++",
    "c": "C",
    "h": "C",
    "rb": "Ruby",
    "php": "PHP",
    "scala": "Scala",
    "sh": "Shell",
    "bash": "Shell",
    "zsh": "Shell",
    "sql": "SQL",
    "dart": "Dart",
    "lua": "Lua",
    "ex": "Elixir",
    "exs": "Elixir",
    "zig": "Zig",
}


def file_extension(path: str) -> str:
    """The text after the last ``.`` of the whole path, lowercased (all of it when there is no dot)."""
    return path.rsplit(".", 1)[-1].lower()


def classify_file_language(path: str) -> str:
    """The language of ``path`` from its extension, or ``"Unknown"``."""
    return EXTENSION_LANGUAGE_MAP.get(file_extension(path), UNKNOWN_LANGUAGE)


def classify_languages(files: Iterable[str]) -> dict[str, list[str]]:
    """Group files by language in first-seen order, leaving out ``Unknown``."""
    out: dict[str, list[str]] = {}
    for path in files:
        language = classify_file_language(path)
        if language != UNKNOWN_LANGUAGE:
            out.setdefault(language, []).append(path)
    return out
