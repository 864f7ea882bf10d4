"""Repository tooling detection and suppression of findings the tooling already enforces (behaviour R2.28).

:func:`detect_repo_tooling` looks for formatter and linter config files at the repository root.
:func:`suppress_tooling_findings` marks ``style``/``documentation`` findings about formatting or import
order as suppressed when the file's language has such tooling, unless a user override says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kodiai.enforcement.severity_floors import LanguageRulesConfig, ToolingOverride, matches_pattern
from kodiai.text.languages import classify_file_language

#: Prettier's config files (JavaScript and TypeScript share them).
_PRETTIER_CONFIGS = (
    ".prettierrc",
    ".prettierrc.json",
    ".prettierrc.yml",
    ".prettierrc.yaml",
    ".prettierrc.js",
    ".prettierrc.cjs",
    "prettier.config.js",
    "prettier.config.cjs",
    ".editorconfig",
)

FORMATTER_CONFIGS: dict[str, list[str]] = {
    "JavaScript": list(_PRETTIER_CONFIGS),
    "TypeScript": list(_PRETTIER_CONFIGS),
    "Python": [".black.toml", "pyproject.toml", ".editorconfig"],
    "C++": [".clang-format", ".editorconfig"],
    "C": [".clang-format", ".editorconfig"],
    "Go": [".editorconfig"],
    "Rust": ["rustfmt.toml", ".rustfmt.toml", ".editorconfig"],
    "Java": [".editorconfig", "google-java-format.xml"],
}

#: ESLint's config files (JavaScript and TypeScript share them).
_ESLINT_CONFIGS = (
    ".eslintrc",
    ".eslintrc.json",
    ".eslintrc.js",
    ".eslintrc.yml",
    ".eslintrc.yaml",
    ".eslintrc.cjs",
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
)

LINTER_CONFIGS: dict[str, list[str]] = {
    "JavaScript": list(_ESLINT_CONFIGS),
    "TypeScript": list(_ESLINT_CONFIGS),
    "Python": ["setup.cfg", "tox.ini", ".flake8", ".pylintrc", "pyproject.toml"],
    "Go": [".golangci.yml", ".golangci.yaml", ".golangci.json"],
    "Rust": ["clippy.toml", ".clippy.toml"],
}

GO_MOD = "go.mod"
GOFMT_ENTRY = "go.mod (gofmt built-in)"

FORMATTING_KEYWORDS: list[list[str]] = [
    ["formatting"],
    ["indentation"],
    ["indent"],
    ["trailing", "comma"],
    ["semicolon"],
    ["bracket", "placement"],
    ["brace", "style"],
    ["line", "length"],
    ["whitespace"],
    ["spacing"],
    ["quote", "style"],
    ["tab"],
    ["newline"],
]

IMPORT_ORDER_KEYWORDS: list[list[str]] = [
    ["import", "order"],
    ["import", "sort"],
    ["import", "group"],
    ["import", "arrange"],
    ["sorted", "import"],
    ["organize", "import"],
]

SUPPRESSIBLE_CATEGORIES = frozenset({"style", "documentation"})


class DetectedTooling(BaseModel):
    """Config files found per language (only languages with at least one file)."""

    formatters: dict[str, list[str]] = Field(default_factory=dict)
    linters: dict[str, list[str]] = Field(default_factory=dict)


def detect_repo_tooling(workspace_dir: str | Path) -> DetectedTooling:
    """Scan the root of ``workspace_dir`` (not subdirectories) for formatter and linter configs.

    ``go.mod`` replaces the Go formatter entry with ``go.mod (gofmt built-in)``. A missing or unreadable
    directory gives empty maps.
    """
    root = Path(workspace_dir)
    try:
        if not root.is_dir():
            return DetectedTooling()
        present = {entry.name for entry in root.iterdir() if entry.is_file()}
    except OSError:
        return DetectedTooling()

    def found(table: dict[str, list[str]]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for language, names in table.items():
            hits = [name for name in names if name in present]
            if hits:
                out[language] = hits
        return out

    formatters = found(FORMATTER_CONFIGS)
    if GO_MOD in present:
        formatters["Go"] = [GOFMT_ENTRY]
    return DetectedTooling(formatters=formatters, linters=found(LINTER_CONFIGS))


def is_formatting_finding(title: str) -> bool:
    """The title mentions formatting (case-insensitive; ``tab`` also matches ``table``)."""
    return matches_pattern(title, FORMATTING_KEYWORDS)


def is_import_order_finding(title: str) -> bool:
    """The title is about import ordering/sorting/grouping."""
    return matches_pattern(title, IMPORT_ORDER_KEYWORDS)


def _override_for(overrides: Sequence[ToolingOverride], language: str) -> ToolingOverride | None:
    """The last override for ``language`` (a later entry wins)."""
    match = None
    for override in overrides:
        if override.language == language:
            match = override
    return match


def is_tooling_suppressed(
    finding: Mapping[str, Any], tooling: DetectedTooling, overrides: Sequence[ToolingOverride]
) -> bool:
    """Whether one finding is already enforced by the repository's formatter or linter."""
    if finding.get("category") not in SUPPRESSIBLE_CATEGORIES:
        return False
    language = classify_file_language(finding["file_path"])
    override = _override_for(overrides, language)
    title = finding["title"]
    if is_formatting_finding(title):
        if override is not None and override.suppress_formatting is False:
            return False
        if language in tooling.formatters:
            return True
    if is_import_order_finding(title):
        if override is not None and override.suppress_import_order is False:
            return False
        if language in tooling.linters:
            return True
    return False


def suppress_tooling_findings(
    findings: Sequence[Mapping[str, Any]],
    detected_tooling: DetectedTooling | Mapping[str, Any],
    language_rules: LanguageRulesConfig | Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Return each finding with ``tooling_suppressed`` set (other fields are kept as given)."""
    tooling = DetectedTooling.model_validate(detected_tooling)
    rules = (
        LanguageRulesConfig()
        if language_rules is None
        else LanguageRulesConfig.model_validate(language_rules)
    )
    return [
        {**f, "tooling_suppressed": is_tooling_suppressed(f, tooling, rules.tooling_overrides)}
        for f in findings
    ]
