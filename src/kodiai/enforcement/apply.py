"""Language enforcement for one review (behaviour R1 step 39, R2.28 ``applyEnforcement``).

Detect the repository's tooling (reads the workspace root), suppress the findings that tooling already
covers, then apply the severity floors. Fail-open: any error returns the findings unchanged with
``original_severity=severity``, ``severity_elevated=False`` and ``tooling_suppressed=False``, and a warning.

Typed at the seam (``ExtractedFinding`` in, ``EnforcedFinding`` out); the pure floor and tooling functions
inside keep the original's plain-object form, which the parity vectors pin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kodiai.config.models import LanguageRulesConfig as RepoLanguageRules
from kodiai.enforcement.severity_floors import LanguageRulesConfig, enforce_severity_floors
from kodiai.enforcement.tooling import detect_repo_tooling, suppress_tooling_findings
from kodiai.findings import EnforcedFinding, ExtractedFinding
from kodiai.log import get_logger

APPLIED_MESSAGE = "Language enforcement applied"
FAILED_MESSAGE = "Language enforcement failed; continuing with unmodified findings (fail-open)"


def _unchanged(findings: Sequence[ExtractedFinding]) -> list[EnforcedFinding]:
    return [EnforcedFinding(**f.model_dump(), original_severity=f.severity) for f in findings]


def apply_enforcement(
    findings: Sequence[ExtractedFinding],
    workspace_dir: str | Path,
    files_by_category: Mapping[str, Sequence[str]],
    files_by_language: Mapping[str, Sequence[str]],
    language_rules: RepoLanguageRules | LanguageRulesConfig | Mapping[str, Any] | None = None,
    delivery_id: str | None = None,
) -> list[EnforcedFinding]:
    """Tooling suppression then severity floors; the floors' ``tooling_suppressed`` is merged back by index."""
    log = get_logger(__name__, delivery_id=delivery_id)
    if not findings:
        return []
    try:
        tooling = detect_repo_tooling(workspace_dir)
        rules = (
            None
            if language_rules is None
            else LanguageRulesConfig.model_validate(language_rules, from_attributes=True)
        )
        plain = [f.model_dump() for f in findings]
        suppressed = suppress_tooling_findings(plain, tooling, rules)
        floored = enforce_severity_floors(plain, files_by_category, files_by_language, rules)
        result = [
            EnforcedFinding.model_validate(
                {**entry, "tooling_suppressed": suppressed[i]["tooling_suppressed"]}
            )
            for i, entry in enumerate(floored)
        ]
    except Exception as exc:
        log.warning(FAILED_MESSAGE, error=str(exc))
        return _unchanged(findings)
    suppressed_count = sum(1 for f in result if f.tooling_suppressed)
    elevated_count = sum(1 for f in result if f.severity_elevated)
    if suppressed_count or elevated_count:
        log.info(APPLIED_MESSAGE, tooling_suppressed=suppressed_count, severity_elevated=elevated_count)
    return result
