"""PR Intent Scoping, Focus Hints, Conventional Commit Context and Author Experience (R2.32 items 17–21)."""

from __future__ import annotations

from .context import ConventionalTypeView


def build_pr_intent_scoping_section(head_branch: str, pr_labels: list[str] | None = None) -> str:
    """``## PR Intent Scoping``: read the labels and branch name to keep findings on the PR's purpose."""
    lines = ["## PR Intent Scoping", ""]
    lines.append("Infer the intent of this PR from its title, description, labels and branch name:")
    if pr_labels:
        lines.append(f"Labels (if present): {', '.join(pr_labels)}")
    lines.append(f"Branch: {head_branch}")
    lines += [
        "",
        "Scope your findings to that intent:",
        "- CI/test fix (for example `ci`, `test` or `fix-tests` branches and labels): focus on whether the "
        "pipeline or tests now do what they should; do not review unrelated production code.",
        "- Bug fix (for example `fix/…` or a `bug` label): check that the fix addresses the root cause and "
        "does not introduce regressions.",
        "- Feature (for example `feat/…` or an `enhancement` label): review correctness, security and error "
        "handling of the new behaviour.",
        "- Refactor or chore: look for unintended behaviour changes.",
        "Findings outside the PR's intent belong in Preference unless CRITICAL severity.",
    ]
    return "\n".join(lines)


def build_focus_hints_section(focus_hints: list[str]) -> str:
    """``## Focus Hints``: the PR's unrecognised bracket tags, de-duplicated, as ``- [TAG]``."""
    seen: list[str] = []
    for hint in focus_hints:
        tag = hint.lower()
        if tag and tag not in seen:
            seen.append(tag)
    if not seen:
        return ""
    return "\n".join(
        [
            "## Focus Hints",
            "",
            "The PR author tagged the title or commits with these hints. Give the matching areas extra attention:",
            *(f"- [{tag.upper()}]" for tag in seen),
        ]
    )


CONVENTIONAL_GUIDANCE: dict[str, str] = {
    "feat": "This PR adds a feature: check the new behaviour for correctness, input validation, error handling "
    "and test coverage.",
    "fix": "This PR fixes a bug: check that the fix addresses the root cause, covers the edge cases, and does "
    "not regress related behaviour.",
    "docs": "This PR changes documentation: check for factual accuracy against the code; do not nitpick prose.",
    "refactor": "This PR is a refactor: behaviour must not change. Look for unintended behaviour changes and "
    "broken callers.",
    "perf": "This PR is a performance change: check that it keeps behaviour identical and that the gain is "
    "real (no new allocations or I/O on hot paths).",
    "test": "This PR changes tests: check that the tests assert the behaviour they name and cannot pass "
    "vacuously.",
    "ci": "This PR changes CI: check for broken pipelines, leaked secrets and overly broad permissions.",
    "chore": "This PR is maintenance: focus on accidental behaviour changes and dependency risks.",
}


def build_conventional_commit_section(conventional: ConventionalTypeView | None) -> str:
    """``## Conventional Commit Context`` for guided types, and the breaking-change paragraph."""
    if conventional is None:
        return ""
    guidance = CONVENTIONAL_GUIDANCE.get(conventional.type)
    if guidance is None and not conventional.is_breaking:
        return ""
    lines = [
        "## Conventional Commit Context",
        "",
        f"The PR title uses the conventional commit type `{conventional.type}`.",
    ]
    if guidance is not None:
        lines.append(guidance)
    if conventional.is_breaking:
        lines += [
            "",
            "**BREAKING CHANGE indicated.** Check that the breaking change is intentional, documented, and that "
            "every caller, configuration and migration path inside this repository is updated.",
        ]
    return "\n".join(lines)


def build_author_experience_section(author_tier: str | None, author_login: str) -> str:
    """``## Author Experience Context``: tone for first-time and core authors; "" for regular ones."""
    if author_tier == "first-time":
        return "\n".join(
            [
                "## Author Experience Context",
                "",
                f"The author ({author_login}) is a first-time or new contributor to this repository.",
                "- Use an encouraging, welcoming tone.",
                "- Explain WHY an issue matters, not just what to change.",
                "- Frame findings as learning opportunities and point to the relevant code or docs.",
                "- Keep the same severity standards; only the tone changes.",
            ]
        )
    if author_tier == "core":
        return "\n".join(
            [
                "## Author Experience Context",
                "",
                f"The author ({author_login}) is a core contributor who knows this codebase well.",
                "- Be concise and terse; skip explanations of project conventions.",
                "- Focus on the issue and its consequence.",
            ]
        )
    return ""
