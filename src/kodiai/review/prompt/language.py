"""Language-specific guidance and the output-language section (R2.32 items 9 and 32)."""

from __future__ import annotations

MAX_LANGUAGE_GUIDANCE_ENTRIES = 5

LANGUAGE_GUIDANCE: dict[str, list[str]] = {
    "Python": [
        "Mutable default arguments (lists, dicts, sets) shared between calls.",
        "Bare `except:` or overly broad `except Exception` that hides real failures.",
        "Resources (files, sockets, locks) opened without a context manager.",
        "Blocking calls inside async functions and un-awaited coroutines.",
    ],
    "Go": [
        "Errors that are ignored, shadowed, or returned without context.",
        "Goroutine leaks and missing cancellation through `context.Context`.",
        "Data races on shared state without a mutex or channel.",
        "`defer` inside loops and nil map or nil pointer writes.",
    ],
    "Rust": [
        "`unwrap()`/`expect()` on values that can fail at runtime.",
        "`unsafe` blocks without a documented safety invariant.",
        "Needless `clone()` or allocation on hot paths.",
    ],
    "Java": [
        "Unclosed resources; prefer try-with-resources.",
        "Possible `NullPointerException` on unchecked return values.",
        "Shared mutable state without synchronisation.",
    ],
    "C++": [
        "Raw `new`/`delete` where RAII or smart pointers fit.",
        "Use-after-free, dangling references and iterator invalidation.",
        "Undefined behaviour: signed overflow, out-of-bounds access, uninitialised reads.",
    ],
    "C": [
        "Buffer overflows and unchecked lengths in string and memory functions.",
        "Missing checks of `malloc` and system-call return values.",
        "Memory leaks and double frees on error paths.",
    ],
    "Ruby": [
        "Unsafe metaprogramming (`send`, `eval`) on user input.",
        "N+1 queries and missing eager loading.",
        "Mutation of frozen or shared constants.",
    ],
    "PHP": [
        "SQL built by string concatenation instead of prepared statements.",
        "Output echoed without escaping (XSS).",
        "Loose comparisons (`==`) where strict comparison (`===`) is required.",
    ],
    "Swift": [
        "Force unwrapping (`!`) and force casts (`as!`) that can crash.",
        "Retain cycles in closures capturing `self` strongly.",
        "UI work performed off the main thread.",
    ],
}

_TAXONOMY_NOTE = (
    "Use the same severity levels (CRITICAL, MAJOR, MEDIUM, MINOR) and categories (security, correctness, "
    "performance, error-handling, style, documentation) for language-specific findings as for any other finding."
)


def build_language_guidance_section(files_by_language: dict[str, list[str]] | None) -> str:
    """Guidance for up to 5 guided languages, most files first (stable); "" when none has guidance."""
    if not files_by_language:
        return ""
    guided = [(lang, files) for lang, files in files_by_language.items() if lang in LANGUAGE_GUIDANCE]
    if not guided:
        return ""
    guided.sort(key=lambda item: -len(item[1]))
    lines = ["## Language-Specific Guidance"]
    for lang, files in guided[:MAX_LANGUAGE_GUIDANCE_ENTRIES]:
        lines += [
            "",
            f"### {lang} ({len(files)} file(s))",
            *(f"- {rule}" for rule in LANGUAGE_GUIDANCE[lang]),
        ]
    lines += ["", _TAXONOMY_NOTE]
    return "\n".join(lines)


def build_output_language_section(output_language: str | None) -> str:
    """``## Output Language`` for any language other than English (case-insensitive)."""
    if not output_language or output_language.lower() == "en":
        return ""
    return "\n".join(
        [
            "## Output Language",
            "",
            f"Write all explanatory prose (finding descriptions, summaries, suggestions) in {output_language}.",
            "Keep the following in English, exactly as specified:",
            "- Severity labels (CRITICAL, MAJOR, MEDIUM, MINOR)",
            "- Category labels (security, correctness, performance, style, documentation)",
            "- Code identifiers, function names and variable names",
            "- Code snippets and suggestion blocks",
            "- File paths",
            "- YAML metadata blocks",
            "- Section headings and verdict labels of the summary template",
            "Only the human-readable explanation text should be localized.",
        ]
    )
