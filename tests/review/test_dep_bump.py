"""behaviour R4.11 (dependency-bump detector, DB-01…DB-42) and its JS traps."""

from __future__ import annotations

import pytest

from kodiai.review.dep_bumps.detect import (
    DepBumpDetails,
    DepBumpDetection,
    SemverParts,
    classify_dep_bump,
    detect_dep_bump,
    extract_dep_bump_details,
    parse_semver,
)

DEPENDABOT = DepBumpDetection(source="dependabot", signals=["title", "branch", "sender"])


def test_db_01_dependabot_title_branch_sender() -> None:
    det = detect_dep_bump(
        "Bump lodash from 4.17.20 to 4.17.21", [], "dependabot/npm_and_yarn/lodash-4.17.21", "dependabot[bot]"
    )
    assert det is not None and det.source == "dependabot"
    assert {"title", "branch", "sender"} <= set(det.signals)


def test_db_02_conventional_dependabot_title() -> None:
    det = detect_dep_bump(
        "chore(deps): bump lodash from 4.17.20 to 4.17.21", ["dependencies"], "main", "someone"
    )
    assert det is not None and "title" in det.signals


def test_db_03_renovate_all_four_signals() -> None:
    det = detect_dep_bump(
        "Update dependency typescript to v5.4.0", ["renovate"], "renovate/typescript-5.x", "renovate[bot]"
    )
    assert det == DepBumpDetection(source="renovate", signals=["title", "branch", "sender", "label"])


def test_db_04_human_bump_title() -> None:
    assert detect_dep_bump("Bump minimum Node version to 20", [], "feature/node-20", "alice") is None


def test_db_05_no_signals() -> None:
    assert detect_dep_bump("Fix typo in readme", [], "fix/typo", "alice") is None


def test_db_06_dependabot_group_without_title_signal() -> None:
    det = detect_dep_bump(
        "Bump the react group with 3 updates",
        ["dependencies"],
        "dependabot/npm_and_yarn/react",
        "dependabot[bot]",
    )
    assert det is not None and det.source == "dependabot" and "title" not in det.signals


def test_db_07_custom_title_with_branch_and_sender() -> None:
    det = detect_dep_bump("Security fixes", [], "dependabot/pip/requests-2.32", "dependabot[bot]")
    assert det is not None and det.signals == ["branch", "sender"]


def test_db_08_label_and_sender() -> None:
    det = detect_dep_bump("Something", ["dependencies"], "main", "dependabot[bot]")
    assert det is not None and det.signals == ["sender", "label"]


def test_db_09_title_and_security_label() -> None:
    det = detect_dep_bump("Bump axios from 0.21.1 to 0.21.2", ["security"], "main", "alice")
    assert det is not None and det.signals == ["title", "label"] and det.source == "dependabot"


def test_db_10_label_only() -> None:
    assert detect_dep_bump("Something", ["dependencies"], "main", "alice") is None


def test_db_11_extract_dependabot() -> None:
    details = extract_dep_bump_details(
        DEPENDABOT, "Bump lodash from 4.17.20 to 4.17.21", None, [], "dependabot/npm_and_yarn/lodash-4.17.21"
    )
    assert details == DepBumpDetails(
        package_name="lodash", old_version="4.17.20", new_version="4.17.21", ecosystem="npm", is_group=False
    )


def test_db_12_extract_renovate() -> None:
    details = extract_dep_bump_details(
        DEPENDABOT, "Update dependency typescript to v5.4.0", None, ["package.json"], "renovate/typescript"
    )
    assert (details.package_name, details.old_version, details.new_version, details.ecosystem) == (
        "typescript",
        None,
        "5.4.0",
        "npm",
    )


def test_db_13_extract_renovate_range() -> None:
    details = extract_dep_bump_details(
        DEPENDABOT, "Update dependency typescript from 5.3.0 to v5.4.0", None, [], "renovate/x"
    )
    assert (details.old_version, details.new_version) == ("5.3.0", "5.4.0")


def test_db_14_group() -> None:
    details = extract_dep_bump_details(
        DEPENDABOT, "Bump the react group with 3 updates", None, [], "dependabot/npm_and_yarn/react"
    )
    assert details == DepBumpDetails(
        package_name=None, old_version=None, new_version=None, ecosystem="npm", is_group=True
    )


def test_db_15_pip_branch() -> None:
    assert (
        extract_dep_bump_details(DEPENDABOT, "x", None, [], "dependabot/pip/requests-2").ecosystem == "python"
    )


def test_db_16_go_modules_branch_and_package() -> None:
    details = extract_dep_bump_details(
        DEPENDABOT,
        "Bump golang.org/x/net from 0.17.0 to 0.23.0",
        None,
        [],
        "dependabot/go_modules/golang.org/x/net-0.23.0",
    )
    assert details.ecosystem == "go" and details.package_name == "golang.org/x/net"


def test_db_17_manifest_fallback_go() -> None:
    assert (
        extract_dep_bump_details(DEPENDABOT, "x", None, ["go.mod", "go.sum"], "renovate/x").ecosystem == "go"
    )


def test_db_18_gemfile_ruby() -> None:
    details = extract_dep_bump_details(DEPENDABOT, "x", None, ["Gemfile", "Gemfile.lock"], "renovate/x")
    assert details.ecosystem == "ruby"


def test_db_19_conventional_dependabot_extraction() -> None:
    details = extract_dep_bump_details(
        DEPENDABOT, "chore(deps): bump lodash from 4.17.20 to 4.17.21", None, [], "x"
    )
    assert (details.package_name, details.old_version, details.new_version) == (
        "lodash",
        "4.17.20",
        "4.17.21",
    )


def test_db_20_monorepo_group() -> None:
    details = extract_dep_bump_details(
        DEPENDABOT, "Update react monorepo", None, ["package.json"], "renovate/react"
    )
    assert details.is_group is True and details.ecosystem == "npm"


@pytest.mark.parametrize(
    ("segment", "ecosystem"),
    [
        ("cargo", "rust"),
        ("composer", "php"),
        ("maven", "java"),
        ("gradle", "java"),
        ("nuget", "dotnet"),
        ("bundler", "ruby"),
        ("github_actions", "github-actions"),
        ("docker", "docker"),
        ("terraform", "terraform"),
    ],
)
def test_db_21_branch_segments(segment: str, ecosystem: str) -> None:
    """R4.11 DB-21: dependabot branch segment → ecosystem."""
    assert (
        extract_dep_bump_details(DEPENDABOT, "x", None, [], f"dependabot/{segment}/pkg").ecosystem
        == ecosystem
    )


@pytest.mark.parametrize(
    ("manifest", "ecosystem"),
    [
        ("package.json", "npm"),
        ("package-lock.json", "npm"),
        ("yarn.lock", "npm"),
        ("pnpm-lock.yaml", "npm"),
        ("Cargo.toml", "rust"),
        ("requirements.txt", "python"),
        ("Pipfile", "python"),
        ("pyproject.toml", "python"),
        ("pom.xml", "java"),
        ("build.gradle", "java"),
        ("composer.json", "php"),
    ],
)
def test_db_22_manifest_fallbacks(manifest: str, ecosystem: str) -> None:
    """R4.11 DB-22: manifest basename → ecosystem."""
    details = extract_dep_bump_details(DEPENDABOT, "x", None, ["src/a.ts", f"sub/{manifest}"], "renovate/x")
    assert details.ecosystem == ecosystem


@pytest.mark.parametrize(
    ("cid", "version", "expected"),
    [
        ("DB-23", "1.2.3", (1, 2, 3)),
        ("DB-24", "v2.0.0", (2, 0, 0)),
        ("DB-25", "V2.0.0", (2, 0, 0)),
        ("DB-26", "1.0.0-beta.1", (1, 0, 0)),
        ("DB-27", "1.0.0+build.123", (1, 0, 0)),
        ("DB-28", "1.2", (1, 2, 0)),
        ("DB-29", "2024.01.15", (2024, 1, 15)),
        ("DB-30", "42", None),
        ("DB-31", "not-a-version", None),
        ("DB-32", "", None),
    ],
)
def test_db_23_to_32_parse_semver(cid: str, version: str, expected: tuple[int, int, int] | None) -> None:
    """R4.11 DB-23…DB-32: parseSemver."""
    parsed = parse_semver(version)
    assert (None if parsed is None else (parsed.major, parsed.minor, parsed.patch)) == expected, cid


@pytest.mark.parametrize(
    ("cid", "old", "new", "bump", "breaking"),
    [
        ("DB-33", "1.0.0", "2.0.0", "major", True),
        ("DB-34", "1.0.0", "1.1.0", "minor", False),
        ("DB-35", "1.0.0", "1.0.1", "patch", False),
        ("DB-36", "v1.0.0", "v2.0.0", "major", True),
        ("DB-37", "1.0.0-beta.1", "1.0.0", "unknown", False),
        ("DB-38", None, "1.0.0", "unknown", False),
        ("DB-39", "1.0.0", None, "unknown", False),
        ("DB-40", "garbage", "1.0.0", "unknown", False),
        ("DB-41", "2024.01.15", "2024.02.01", "minor", False),
        ("DB-42", None, None, "unknown", False),
    ],
)
def test_db_33_to_42_classify(cid: str, old: str | None, new: str | None, bump: str, breaking: bool) -> None:
    """R4.11 DB-33…DB-42: classifyDepBump."""
    result = classify_dep_bump(old, new)
    assert (result.bump_type, result.is_breaking) == (bump, breaking), cid


def test_trap_parse_semver_strips_v_before_the_js_trim() -> None:
    """`` v1.2`` is null (the ``v`` is not leading before the trim); ``\\ufeff1.2`` parses (JS trim strips BOM)."""
    assert parse_semver(" v1.2") is None
    assert parse_semver("\ufeff1.2") == SemverParts(major=1, minor=2, patch=0)


def test_trap_parse_semver_uses_parse_int() -> None:
    """``1.2beta`` → minor 2; ``1e3.2`` → major 1; ``99999999999999999999.1.0`` → major 1e20; ``１.２`` → null."""
    assert parse_semver("1.2beta") == SemverParts(major=1, minor=2, patch=0)
    assert parse_semver("1e3.2") == SemverParts(major=1, minor=2, patch=0)
    assert parse_semver("99999999999999999999.1.0") == SemverParts(major=10**20, minor=1, patch=0)
    assert parse_semver("１.２") is None


def test_trap_detector_uses_js_whitespace_and_ascii_case_folding() -> None:
    """``bump\\ufeffx from`` is a title signal (U+FEFF is JS ``\\s``); labels/branch/sender lowercase, no trim."""
    det = detect_dep_bump("bump\ufeff@scope/pkg from 1.2.3 to 1.6.0", ["Dependencies"], "main", "x")
    assert det is not None and det.signals == ["title", "label"]
    assert detect_dep_bump("Bump x from 1 to 2", [" dependencies"], "main", "x") is None
    assert detect_dep_bump("x", [], "Dependabot/pip/requests", "DEPENDABOT[BOT]") is not None


def test_trap_extraction_captures_trailing_punctuation_and_one_v() -> None:
    details = extract_dep_bump_details(DEPENDABOT, "Bump lodash, from vv1.0.0 to V2.0.0", None, [], "x")
    assert (details.package_name, details.old_version, details.new_version) == ("lodash,", "v1.0.0", "2.0.0")


def test_trap_branch_segments_and_manifests_are_case_sensitive() -> None:
    assert (
        extract_dep_bump_details(DEPENDABOT, "x", None, ["PACKAGE.JSON"], "dependabot/PIP/x").ecosystem
        is None
    )
    assert extract_dep_bump_details(DEPENDABOT, "x", None, [], "Dependabot/pip/x").ecosystem == "python"


def test_group_word_is_an_ascii_word() -> None:
    assert extract_dep_bump_details(DEPENDABOT, "Bump groupies from 1 to 2", None, [], "x").is_group is False
    assert extract_dep_bump_details(DEPENDABOT, "Bump é-group é", None, [], "x").is_group is True
