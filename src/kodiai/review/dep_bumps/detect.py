"""Dependency-bump PR detection, details extraction and semver classification (behaviour R2.9).

The original's regexes have no ``u`` flag: ``\\s``/``\\S`` are JS whitespace classes and ``/i`` folds
ASCII letters only (``re.ASCII | re.IGNORECASE``, with :data:`JS_S` / :data:`JS_NOT_S`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from kodiai.compat.js import JS_NOT_S, JS_S, js_parse_int, js_trim

__all__ = [
    "BRANCH_ECOSYSTEMS",
    "MANIFEST_ECOSYSTEMS",
    "DepBumpClassification",
    "DepBumpDetails",
    "DepBumpDetection",
    "SemverParts",
    "classify_dep_bump",
    "detect_dep_bump",
    "extract_dep_bump_details",
    "parse_semver",
]

DepBumpSource = Literal["dependabot", "renovate", "unknown"]
DepBumpSignal = Literal["title", "branch", "sender", "label"]
BumpType = Literal["major", "minor", "patch", "unknown"]

_FLAGS = re.ASCII | re.IGNORECASE
_PREFIX = rf"^(?:chore\([^)]*\):{JS_S}*)?"
_DEPENDABOT_DETECT_RE = re.compile(rf"{_PREFIX}bump{JS_S}+{JS_NOT_S}+{JS_S}+(?:from|the){JS_S}", _FLAGS)
_RENOVATE_DETECT_RE = re.compile(rf"{_PREFIX}update{JS_S}+(?:dependency{JS_S}+)?{JS_NOT_S}+{JS_S}", _FLAGS)
_DEPENDABOT_EXTRACT_RE = re.compile(
    rf"{_PREFIX}bump{JS_S}+({JS_NOT_S}+){JS_S}+from{JS_S}+v?({JS_NOT_S}+){JS_S}+to{JS_S}+v?({JS_NOT_S}+)",
    _FLAGS,
)
_RENOVATE_RANGE_RE = re.compile(
    rf"{_PREFIX}update{JS_S}+(?:dependency{JS_S}+)?({JS_NOT_S}+){JS_S}+from{JS_S}+v?({JS_NOT_S}+)"
    rf"{JS_S}+to{JS_S}+v?({JS_NOT_S}+)",
    _FLAGS,
)
_RENOVATE_EXTRACT_RE = re.compile(
    rf"{_PREFIX}update{JS_S}+(?:dependency{JS_S}+)?({JS_NOT_S}+){JS_S}+to{JS_S}+v?({JS_NOT_S}+)", _FLAGS
)
_GROUP_RE = re.compile(r"\bgroup\b|\bmonorepo\b", _FLAGS)

BOT_SENDERS: dict[str, DepBumpSource] = {"dependabot[bot]": "dependabot", "renovate[bot]": "renovate"}
DEP_LABELS = frozenset({"dependencies", "renovate", "security"})

BRANCH_ECOSYSTEMS: dict[str, str] = {
    "npm_and_yarn": "npm",
    "pip": "python",
    "go_modules": "go",
    "cargo": "rust",
    "composer": "php",
    "maven": "java",
    "gradle": "java",
    "nuget": "dotnet",
    "bundler": "ruby",
    "github_actions": "github-actions",
    "docker": "docker",
    "terraform": "terraform",
}
MANIFEST_ECOSYSTEMS: dict[str, str] = {
    "package.json": "npm",
    "package-lock.json": "npm",
    "yarn.lock": "npm",
    "pnpm-lock.yaml": "npm",
    "go.mod": "go",
    "go.sum": "go",
    "Cargo.toml": "rust",
    "Cargo.lock": "rust",
    "requirements.txt": "python",
    "Pipfile": "python",
    "Pipfile.lock": "python",
    "pyproject.toml": "python",
    "Gemfile": "ruby",
    "Gemfile.lock": "ruby",
    "pom.xml": "java",
    "build.gradle": "java",
    "composer.json": "php",
}


class DepBumpDetection(BaseModel):
    source: DepBumpSource
    signals: list[DepBumpSignal]


class DepBumpDetails(BaseModel):
    package_name: str | None
    old_version: str | None
    new_version: str | None
    ecosystem: str | None
    is_group: bool


class SemverParts(BaseModel):
    major: int | float
    minor: int | float
    patch: int | float


class DepBumpClassification(BaseModel):
    bump_type: BumpType
    is_breaking: bool


def detect_dep_bump(
    pr_title: str,
    pr_labels: Sequence[str],
    head_branch: str,
    sender_login: str,
) -> DepBumpDetection | None:
    """Detect a Dependabot/Renovate PR; at least two of the title, branch, sender and label signals."""
    title_dependabot = _DEPENDABOT_DETECT_RE.search(pr_title) is not None
    title_renovate = _RENOVATE_DETECT_RE.search(pr_title) is not None
    branch = head_branch.lower()
    branch_source: DepBumpSource | None = (
        "dependabot"
        if branch.startswith("dependabot/")
        else "renovate"
        if branch.startswith("renovate/")
        else None
    )
    sender_source = BOT_SENDERS.get(sender_login.lower())
    has_label = any(label.lower() in DEP_LABELS for label in pr_labels)

    signals: list[DepBumpSignal] = []
    if title_dependabot or title_renovate:
        signals.append("title")
    if branch_source is not None:
        signals.append("branch")
    if sender_source is not None:
        signals.append("sender")
    if has_label:
        signals.append("label")
    if len(signals) < 2:
        return None

    source: DepBumpSource
    if sender_source == "dependabot" or branch_source == "dependabot":
        source = "dependabot"
    elif sender_source == "renovate" or branch_source == "renovate":
        source = "renovate"
    elif title_dependabot:
        source = "dependabot"
    elif title_renovate:
        source = "renovate"
    else:
        source = "unknown"
    return DepBumpDetection(source=source, signals=signals)


def _ecosystem(head_branch: str, changed_files: Sequence[str]) -> str | None:
    if head_branch.lower().startswith("dependabot/"):
        # The prefix test is case-insensitive; the segment lookup is not.
        segment = head_branch.split("/")[1]
        if segment in BRANCH_ECOSYSTEMS:
            return BRANCH_ECOSYSTEMS[segment]
    for path in changed_files:
        ecosystem = MANIFEST_ECOSYSTEMS.get(path.rsplit("/", 1)[-1])
        if ecosystem is not None:
            return ecosystem
    return None


def extract_dep_bump_details(
    detection: DepBumpDetection | dict[str, Any],
    pr_title: str,
    pr_body: str | None,
    changed_files: Sequence[str],
    head_branch: str,
) -> DepBumpDetails:
    """Package name, versions and ecosystem from the title, branch and changed manifests."""
    del detection, pr_body  # part of the original's signature; not used for extraction
    ecosystem = _ecosystem(head_branch, changed_files)
    if _GROUP_RE.search(pr_title):
        return DepBumpDetails(
            package_name=None, old_version=None, new_version=None, ecosystem=ecosystem, is_group=True
        )
    for regex in (_DEPENDABOT_EXTRACT_RE, _RENOVATE_RANGE_RE):
        match = regex.search(pr_title)
        if match:
            return DepBumpDetails(
                package_name=match.group(1),
                old_version=match.group(2),
                new_version=match.group(3),
                ecosystem=ecosystem,
                is_group=False,
            )
    match = _RENOVATE_EXTRACT_RE.search(pr_title)
    if match:
        return DepBumpDetails(
            package_name=match.group(1),
            old_version=None,
            new_version=match.group(2),
            ecosystem=ecosystem,
            is_group=False,
        )
    return DepBumpDetails(
        package_name=None, old_version=None, new_version=None, ecosystem=ecosystem, is_group=False
    )


def _is_nan(value: int | float) -> bool:
    return isinstance(value, float) and value != value


def parse_semver(version: str | None) -> SemverParts | None:
    """``[v]MAJOR.MINOR[.PATCH][-pre][+build]`` with ``parseInt`` parts; anything else is ``None``.

    The leading ``v``/``V`` is removed *before* the JS trim, so ``" v1.2"`` is ``None``.
    """
    if not version:
        return None
    text = js_trim(re.sub(r"^[vV]", "", version))
    if not text:
        return None
    core = re.split(r"[-+]", text, maxsplit=1)[0]
    parts = core.split(".")
    if len(parts) < 2:
        return None
    major = js_parse_int(parts[0])
    minor = js_parse_int(parts[1])
    patch = js_parse_int(parts[2]) if len(parts) > 2 else 0
    if _is_nan(major) or _is_nan(minor) or _is_nan(patch):
        return None
    return SemverParts(major=major, minor=minor, patch=patch)


def classify_dep_bump(old_version: str | None, new_version: str | None) -> DepBumpClassification:
    """The first differing component gives major (breaking), minor or patch; otherwise ``unknown``."""
    old = parse_semver(old_version) if old_version is not None else None
    new = parse_semver(new_version) if new_version is not None else None
    if old is None or new is None:
        return DepBumpClassification(bump_type="unknown", is_breaking=False)
    if old.major != new.major:
        return DepBumpClassification(bump_type="major", is_breaking=True)
    if old.minor != new.minor:
        return DepBumpClassification(bump_type="minor", is_breaking=False)
    if old.patch != new.patch:
        return DepBumpClassification(bump_type="patch", is_breaking=False)
    return DepBumpClassification(bump_type="unknown", is_breaking=False)
