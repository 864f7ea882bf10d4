"""behaviour R4.19 (merge confidence, MC-01…MC-16), X-34 and the absent-vs-null trap."""

from __future__ import annotations

from typing import Any

from kodiai.review.dep_bumps.merge_confidence import DepBumpContext, MergeConfidence, compute_merge_confidence


def _ctx(bump: str = "patch", breaking: bool = False, **extra: Any) -> DepBumpContext:
    data: dict[str, Any] = {
        "detection": {"source": "dependabot", "signals": ["title", "branch"]},
        "details": {
            "package_name": "lodash",
            "old_version": "1.0.0",
            "new_version": "1.0.1",
            "ecosystem": "npm",
            "is_group": False,
        },
        "classification": {"bump_type": bump, "is_breaking": breaking},
        **extra,
    }
    return DepBumpContext.model_validate(data)


def _advisory(severity: str) -> dict[str, Any]:
    return {"ghsa_id": "GHSA-xxxx", "severity": severity, "affects_old": True, "affects_new": True}


def _changelog(breaking: list[str], source: str = "releases") -> dict[str, Any]:
    return {"release_notes": [], "breaking_changes": breaking, "compare_url": None, "source": source}


NO_ADVISORIES = {"advisories": [], "is_security_bump": False}


def test_mc_01_patch_clean() -> None:
    result = compute_merge_confidence(_ctx(security=NO_ADVISORIES, changelog=_changelog([])))
    assert result == MergeConfidence(
        level="high",
        rationale=[
            "Patch version bump (bug fix only)",
            "No known security advisories",
            "No breaking changes detected in changelog",
        ],
    )


def test_mc_02_minor() -> None:
    result = compute_merge_confidence(_ctx("minor"))
    assert result.level == "high" and "Minor version bump (backward-compatible)" in result.rationale


def test_mc_03_major() -> None:
    result = compute_merge_confidence(_ctx("major", True))
    assert result.level == "medium" and "Major version bump (potential breaking changes)" in result.rationale


def test_mc_04_unknown() -> None:
    result = compute_merge_confidence(_ctx("unknown"))
    assert result.level == "medium" and result.rationale == ["Version change could not be classified"]


def test_mc_05_critical_advisory() -> None:
    result = compute_merge_confidence(
        _ctx(security={"advisories": [_advisory("critical")], "is_security_bump": False})
    )
    assert result.level == "low" and "critical-severity advisory affects this package" in result.rationale


def test_mc_06_medium_advisory() -> None:
    result = compute_merge_confidence(
        _ctx(security={"advisories": [_advisory("medium")], "is_security_bump": False})
    )
    assert result.level == "medium" and "Security advisories exist for this package" in result.rationale


def test_mc_07_major_with_high_advisory() -> None:
    security = {"advisories": [_advisory("low"), _advisory("high")], "is_security_bump": False}
    result = compute_merge_confidence(_ctx("major", True, security=security))
    assert result.level == "low" and "high-severity advisory affects this package" in result.rationale


def test_mc_08_security_motivated_bump() -> None:
    result = compute_merge_confidence(
        _ctx(security={"advisories": [_advisory("critical")], "is_security_bump": True})
    )
    assert result.level == "high"
    assert "Security-motivated bump (patches known vulnerability)" in result.rationale


def test_mc_09_security_null() -> None:
    result = compute_merge_confidence(_ctx(security=None))
    assert result.level == "high" and "Security advisory data unavailable" in result.rationale


def test_mc_10_security_and_changelog_undefined() -> None:
    result = compute_merge_confidence(_ctx())
    assert result == MergeConfidence(level="high", rationale=["Patch version bump (bug fix only)"])


def test_mc_11_major_breaking_with_breaking_change() -> None:
    result = compute_merge_confidence(_ctx("major", True, changelog=_changelog(["BREAKING CHANGE: x"])))
    assert result.level == "low" and "1 breaking change(s) detected in changelog" in result.rationale


def test_mc_12_minor_with_two_breaking_changes() -> None:
    result = compute_merge_confidence(_ctx("minor", changelog=_changelog(["a", "b"])))
    assert result.level == "medium" and "2 breaking change(s) detected in changelog" in result.rationale


def test_mc_13_compare_url_only() -> None:
    result = compute_merge_confidence(_ctx(changelog=_changelog([], "compare-url-only")))
    assert result.level == "high"
    assert "No breaking changes detected in changelog" not in result.rationale


def test_mc_14_changelog_null() -> None:
    result = compute_merge_confidence(_ctx(changelog=None))
    assert result.level == "high" and not any("changelog" in line for line in result.rationale)


def test_mc_15_changelog_undefined() -> None:
    result = compute_merge_confidence(_ctx())
    assert result.level == "high" and not any("breaking" in line.lower() for line in result.rationale)


def test_mc_16_group_bump() -> None:
    """R4.11/R4.19 MC-16 and R4.37 X-34: a group bump has no enrichment, so no advisory rationale."""
    result = compute_merge_confidence(_ctx("unknown"))
    assert result == MergeConfidence(level="medium", rationale=["Version change could not be classified"])


def test_trap_security_absent_differs_from_null() -> None:
    """README §2: a missing ``security`` key means not attempted; ``null`` means failed."""
    absent = _ctx()
    null = _ctx(security=None)
    assert "security" not in absent.model_fields_set and "security" in null.model_fields_set
    assert compute_merge_confidence(absent).rationale != compute_merge_confidence(null).rationale
    plain = {
        "detection": absent.detection,
        "details": absent.details,
        "classification": absent.classification,
    }
    assert compute_merge_confidence(plain).rationale == ["Patch version bump (bug fix only)"]


def test_trap_advisory_severity_is_looked_up_exactly() -> None:
    """``HIGH`` and ``moderate`` rank 0: one-step downgrade, not ``low``."""
    result = compute_merge_confidence(
        _ctx(security={"advisories": [_advisory("HIGH")], "is_security_bump": False})
    )
    assert result.level == "medium" and "Security advisories exist for this package" in result.rationale
