"""apply_enforcement (behaviour R1 step 39, R2.28): detection on a real workspace directory, tooling
suppression merged into the floors' output, and the fail-open path."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from kodiai.config import parse_repo_config
from kodiai.enforcement.apply import APPLIED_MESSAGE, FAILED_MESSAGE, apply_enforcement
from kodiai.findings import EnforcedFinding, ExtractedFinding

FILES_BY_LANGUAGE = {"TypeScript": ["src/app.ts"], "C++": ["src/engine.cpp"]}
FILES_BY_CATEGORY = {"source": ["src/app.ts", "src/engine.cpp"]}


def findings() -> list[ExtractedFinding]:
    return [
        ExtractedFinding(
            comment_id=1,
            file_path="src/app.ts",
            title="Missing semicolon",
            severity="minor",
            category="style",
        ),
        ExtractedFinding(
            comment_id=2,
            file_path="src/engine.cpp",
            title="Null pointer dereference",
            severity="minor",
            category="correctness",
            start_line=3,
            end_line=4,
        ),
    ]


def test_detects_suppresses_and_raises(tmp_path: Path) -> None:
    (tmp_path / ".prettierrc").write_text("{}\n", encoding="utf-8")
    with capture_logs() as logs:
        out = apply_enforcement(
            findings(), tmp_path, FILES_BY_CATEGORY, FILES_BY_LANGUAGE, None, delivery_id="d-1"
        )
    assert [(o.tooling_suppressed, o.severity, o.severity_elevated) for o in out] == [
        (True, "minor", False),
        (False, "critical", True),
    ]
    assert out[1] == EnforcedFinding(
        **findings()[1].model_dump() | {"severity": "critical"},
        original_severity="minor",
        severity_elevated=True,
        enforcement_pattern_id="cpp-null-deref",
    )
    applied = [e for e in logs if e["event"] == APPLIED_MESSAGE]
    assert applied and applied[0]["delivery_id"] == "d-1"


def test_without_tooling_nothing_is_suppressed(tmp_path: Path) -> None:
    out = apply_enforcement(findings(), tmp_path, FILES_BY_CATEGORY, FILES_BY_LANGUAGE)
    assert [o.tooling_suppressed for o in out] == [False, False]


def test_fail_open_on_bad_rules(tmp_path: Path) -> None:
    """A malformed languageRules makes enforcement throw: findings come back unchanged with a warning."""
    with capture_logs() as logs:
        out = apply_enforcement(
            findings(),
            tmp_path,
            FILES_BY_CATEGORY,
            FILES_BY_LANGUAGE,
            {"severity_floors": "oops"},
            delivery_id="d-2",
        )
    assert [(o.severity, o.original_severity, o.severity_elevated, o.tooling_suppressed) for o in out] == [
        ("minor", "minor", False, False),
        ("minor", "minor", False, False),
    ]
    warnings = [e for e in logs if e["event"] == FAILED_MESSAGE]
    assert warnings and warnings[0]["log_level"] == "warning" and warnings[0]["delivery_id"] == "d-2"


def test_empty_findings_skip_everything(tmp_path: Path) -> None:
    assert apply_enforcement([], tmp_path / "does-not-exist", {}, {}) == []


def test_reads_the_repository_config_section_directly(tmp_path: Path) -> None:
    """The review passes ``.kodiai.yml``'s validated ``languageRules`` model, not a dict of it."""
    config = parse_repo_config(
        "languageRules:\n  severityFloors:\n    - pattern: missing semicolon\n      minSeverity: medium\n"
        "  disableBuiltinFloors: true\n"
    ).config
    out = apply_enforcement(findings(), tmp_path, FILES_BY_CATEGORY, FILES_BY_LANGUAGE, config.language_rules)
    assert [(o.severity, o.enforcement_pattern_id) for o in out] == [
        ("medium", "user-missing-semicolon"),
        ("minor", None),
    ]
