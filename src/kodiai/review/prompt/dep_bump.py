"""``## Dependency Bump Context`` (R2.32 item 22)."""

from __future__ import annotations

from kodiai.compat.js import utf16_len, utf16_slice
from kodiai.review.prompt.context import (
    ChangelogView,
    DepBumpPromptContext,
    MergeConfidenceView,
    ScopeGroupView,
    SecurityContextView,
    UsageEvidenceView,
)
from kodiai.review.prompt.truncate import truncate_to_char_budget

MAX_ADVISORIES = 3
ADVISORY_SECTION_CHARS = 500
CHANGELOG_SECTION_CHARS = 1500
RELEASE_NOTE_BODY_CHARS = 500
MAX_USAGE_ENTRIES = 10
USAGE_SNIPPET_CHARS = 200

MERGE_CONFIDENCE_EMOJI = {"high": ":green_circle:", "medium": ":yellow_circle:", "low": ":red_circle:"}
# The prompt's labels; the approval body uses "High" instead of "High Confidence" (R3.5).
PROMPT_MERGE_CONFIDENCE_LABEL = {
    "high": "High Confidence",
    "medium": "Review Recommended",
    "low": "Careful Review Required",
}


def _merge_confidence_lines(mc: MergeConfidenceView) -> list[str]:
    emoji = MERGE_CONFIDENCE_EMOJI[mc.level]
    label = PROMPT_MERGE_CONFIDENCE_LABEL[mc.level]
    return ["", f"**Merge Confidence: {emoji} {label}**", *(f"- {item}" for item in mc.rationale)]


def build_security_section(security: SecurityContextView | None) -> str:
    """Up to 3 advisories, capped at 500 characters; "" without advisories."""
    if security is None or not security.advisories:
        return ""
    heading = (
        "### Security-Motivated Bump"
        if security.is_security_bump
        else "### Security Advisories (informational)"
    )
    lines = [heading]
    if security.is_security_bump:
        lines.append(
            "This bump moves away from a version with known vulnerabilities. Verify the upgrade is complete."
        )
    else:
        lines.append(
            "Advisories exist for this package. They are informational; verify the new version is not affected."
        )
    for adv in security.advisories[:MAX_ADVISORIES]:
        lines.append(f"- **{adv.ghsa_id}** ({adv.severity}): {adv.summary}")
        if adv.cve_id:
            lines.append(f"  - CVE: {adv.cve_id}")
        if adv.first_patched_version:
            lines.append(f"  - Patched in: {adv.first_patched_version}")
        if adv.url:
            lines.append(f"  - Details: {adv.url}")
    return truncate_to_char_budget("\n".join(lines), ADVISORY_SECTION_CHARS)


def build_changelog_section(changelog: ChangelogView | None) -> str:
    """Release notes or changelog excerpt, breaking changes and the compare link, capped at 1500."""
    if changelog is None:
        return ""
    lines: list[str] = []
    if changelog.release_notes:
        lines.append("### Changelog Excerpt" if changelog.source == "changelog-file" else "### Release Notes")
        for note in changelog.release_notes:
            body = note.body
            if utf16_len(body) > RELEASE_NOTE_BODY_CHARS:
                body = utf16_slice(body, 0, RELEASE_NOTE_BODY_CHARS) + "..."
            lines += [f"**{note.tag or 'unknown'}:**", body, ""]
    if changelog.breaking_changes:
        lines.append("**Breaking Changes Detected:**")
        lines += [f"- {change}" for change in changelog.breaking_changes]
        lines.append("")
    if changelog.compare_url:
        prefix = "No release notes or changelog found. " if changelog.source == "compare-url-only" else ""
        lines.append(f"{prefix}[View full diff]({changelog.compare_url})")
    text = "\n".join(lines).strip("\n")
    return truncate_to_char_budget(text, CHANGELOG_SECTION_CHARS) if text else ""


def build_usage_section(usage: UsageEvidenceView | None) -> str:
    """``### Workspace Usage Evidence``: where the package's changed APIs are used in this repository."""
    if usage is None or (not usage.evidence and not usage.timed_out):
        return ""
    lines = ["### Workspace Usage Evidence"]
    if usage.evidence:
        lines.append("The package's breaking-change APIs appear at these locations in this repository:")
    for item in usage.evidence[:MAX_USAGE_ENTRIES]:
        snippet = utf16_slice(item.snippet.replace("`", "'"), 0, USAGE_SNIPPET_CHARS)
        lines.append(f"- `{item.file_path}:{item.line}` -- `{snippet}`")
    if len(usage.evidence) > MAX_USAGE_ENTRIES:
        lines.append(f"- ... and {len(usage.evidence) - MAX_USAGE_ENTRIES} more locations")
    if usage.timed_out:
        lines.append("Note: the usage search timed out; this list may be incomplete.")
    return "\n".join(lines)


def build_scope_section(groups: list[ScopeGroupView] | None) -> str:
    """``### Multi-Package Coordination``: packages of one scope that should move together."""
    if not groups:
        return ""
    lines = [
        "### Multi-Package Coordination",
        "These packages share a scope and are usually released together; check they are bumped consistently:",
    ]
    lines += [f"- {group.scope}: {', '.join(group.packages)}" for group in groups]
    return "\n".join(lines)


def build_dep_bump_section(ctx: DepBumpPromptContext | None) -> str:
    """The whole dependency-bump section, or "" when the PR is not a dependency bump."""
    if ctx is None:
        return ""
    details, classification = ctx.details, ctx.classification
    signals = ", ".join(ctx.detection.signals)
    lines = [
        "## Dependency Bump Context",
        "",
        f"This PR is an automated dependency update (detected via: {signals}).",
    ]
    if ctx.merge_confidence is not None:
        lines += _merge_confidence_lines(ctx.merge_confidence)
    lines.append("")
    if details.is_group:
        lines.append(
            "This is a group dependency update: several packages are bumped together. Review each package's "
            "change for compatibility with the others."
        )
    if details.package_name:
        lines.append(f"- **Package:** {details.package_name}")
    if details.new_version:
        old = f"{details.old_version} " if details.old_version else ""
        lines.append(f"- **Version:** {old}→ {details.new_version}")
    if details.ecosystem:
        lines.append(f"- **Ecosystem:** {details.ecosystem}")
    if classification.bump_type != "unknown":
        lines.append(f"- **Bump type:** {classification.bump_type}")
    lines.append("")
    if classification.is_breaking:
        lines += [
            "**⚠ MAJOR version bump — potential breaking changes.**",
            "Focus on:",
            "- Breaking API changes: removed or renamed functions, changed signatures or return types.",
            "- Deprecated APIs this repository still calls.",
            "- Changed default behaviour and configuration options.",
            "- Peer-dependency and runtime-version requirements.",
        ]
    elif classification.bump_type in ("minor", "patch"):
        lines.append(
            "This is a minor/patch dependency update: routine maintenance. Only flag issues if the update "
            "visibly affects code in this repository."
        )
    for part in (
        build_security_section(ctx.security),
        build_changelog_section(ctx.changelog),
        build_usage_section(ctx.usage_evidence),
        build_scope_section(ctx.scope_groups),
    ):
        if part:
            lines += ["", part]
    if ctx.merge_confidence is not None:
        lines += [
            "",
            "Include the merge confidence in your Verdict:",
            "- State the merge confidence level shown above.",
            "- Name the main rationale item behind it.",
            "- Say whether your findings change that assessment.",
        ]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines)
