"""Fixed instruction sections of the review prompt (R2.32 items 10–16, 20 and 30)."""

from __future__ import annotations

from .context import ReviewMode


def two_dot_range(diff_range: str) -> str:
    """The ``git log`` form of a diff range: ``A...B`` becomes ``A..B``.

    ``git diff A...B`` diffs from the merge base, but ``git log A...B`` would list the base branch's own
    commits too (symmetric difference); ``A..B`` lists only the commits the PR adds. A range that is already
    two-dot is returned as is, and a single revision ``A`` becomes ``A..HEAD`` (``git log A`` alone would
    list the whole history).
    """
    left, sep, right = diff_range.partition("...")
    if sep:
        return f"{left}..{right}"
    if ".." in diff_range:
        return diff_range
    return f"{diff_range}..HEAD"


def build_reading_code_section(base_branch: str, diff_range: str | None = None) -> str:
    """``## Reading the code``: the two git tool calls the model should make, and how to read a diff too
    large for one call (the tools answer a page at a time: :mod:`kodiai.execution.tools.git_page`).

    Port deviation: the original named shell commands (``git diff …``, ``git log … --stat``) for its
    ``Bash(git …:*)`` rules; the model has no shell here, so the section names the ``git`` MCP tools with
    the same ranges (``mcp__git__diff`` / ``mcp__git__log``, see ``execution/tools/git_server.py``).

    ``diff_range`` is the range the handler actually diffed (``origin/main..HEAD`` when there was no merge
    base, ``<base_sha>...<head_sha>`` for a local review). It is named as is, so the model is never told to
    read a range that does not exist in its workspace. Unset (or blank), the section names
    ``origin/<base>...HEAD`` as the original does.
    """
    named = (diff_range or "").strip() or f"origin/{base_branch}...HEAD"
    diff_call = f'mcp__git__diff {{"revisions": ["{named}"]}}'
    log_call = f'mcp__git__log {{"revision": "{two_dot_range(named)}", "stat": true}}'
    stat_call = f'mcp__git__diff {{"revisions": ["{named}"], "stat": true}}'
    return "\n".join(
        [
            "## Reading the code",
            "",
            "Start by reading the changes with the git tools (there is no shell):",
            f"- `{diff_call}`",
            f"- `{log_call}`",
            "A git tool answers at most 40,000 bytes per call; a longer answer ends with a note saying how to "
            "get the rest. On a large change, list the files first with "
            f"`{stat_call}`, then read the diff one file at a time by adding "
            '`"paths": ["<file>"]`, or continue a cut answer with the `"offset"` its note gives.',
            "Read surrounding code with Read, Grep and Glob whenever a change depends on context outside the diff.",
        ]
    )


WHAT_TO_LOOK_FOR = "\n".join(
    [
        "## What to look for",
        "",
        "- Bugs and logic errors: wrong conditions, off-by-one errors, broken control flow.",
        "- Security vulnerabilities: injection, missing authorization, secrets in code, unsafe deserialization.",
        "- Error handling: swallowed errors, missing checks, failures that leave inconsistent state.",
        "- Resource management: leaks of files, connections, memory or goroutines/threads.",
        "- Concurrency problems: races, deadlocks, unsynchronised shared state.",
        "- Performance problems with real impact: quadratic loops on large inputs, repeated I/O in hot paths.",
        "- Incorrect API usage and contract changes that break callers.",
    ]
)

HOW_TO_REPORT = "\n".join(
    [
        "## How to report issues",
        "",
        "Use the `mcp__github_inline_comment__create_inline_comment` tool to post each issue as an inline "
        "comment on the exact line (or line range) of the diff where it occurs.",
        "When a concrete fix is small and certain, include a GitHub suggestion block (```suggestion … ```) in "
        "the comment. A suggestion replaces the whole commented line range, so include every line of that range "
        "in the block, with its final indentation.",
    ]
)

RULES = "\n".join(
    [
        "## Rules",
        "",
        "- Only comment on code that this PR adds or changes; never on untouched code.",
        "- One issue per inline comment; do not bundle unrelated problems.",
        "- Be specific: name the failing input or condition and its consequence.",
        "- Do not comment on things that are correct, and do not praise code in inline comments.",
        "- Do not post duplicate comments for the same issue on several lines; comment once where it starts.",
        "- When you post a summary comment it MUST follow the five-section template below exactly "
        "(What Changed, Strengths, Observations, Suggestions, Verdict).",
        "- When you list several items in one sentence, number them inline as (1), (2), (3) instead of "
        "starting new bullet lines.",
    ]
)

SEVERITY_GUIDELINES = "\n".join(
    [
        "## Severity Classification Guidelines",
        "",
        "- CRITICAL: will cause data loss, a security breach, a crash or corruption in normal use. Must be "
        "fixed before merging.",
        "- MAJOR: a real bug or vulnerability under plausible conditions, or a broken contract for callers.",
        "- MEDIUM: a problem with limited impact: an edge case, a missing check with a safe fallback, a "
        "measurable inefficiency.",
        "- MINOR: low-impact improvements: clarity, naming, small maintainability issues.",
        "",
        "Adjust severity by path context:",
        "- Test files: downgrade one level (a MAJOR issue in test code becomes MEDIUM), unless the test no "
        "longer tests what it claims.",
        "- Configuration files: report only CRITICAL issues (for example exposed secrets or a broken deployment "
        "setting).",
        "- Documentation files: report only factual errors that would mislead a reader.",
    ]
)

STANDARD_MODE_FORMAT = "\n".join(
    [
        "## Comment Format (Standard Mode)",
        "",
        "Every inline comment MUST start with a severity tag followed by a short title on the first line: "
        "[CRITICAL], [MAJOR], [MEDIUM] or [MINOR].",
        "Example: `[MAJOR] Unchecked null return from findUser()`",
        "Follow the title with 1–3 sentences explaining the problem and its consequence.",
    ]
)

ENHANCED_MODE_FORMAT = "\n".join(
    [
        "## Comment Format (Enhanced Mode)",
        "",
        "Every inline comment MUST start with a fenced YAML metadata block, then a blank line, a bold title, "
        "and 1–3 sentences:",
        "",
        "```yaml",
        "severity: critical | major | medium | minor",
        "category: security | correctness | performance | style | documentation",
        "suggested_action: <one short imperative sentence>",
        "related_docs_url: <optional URL to relevant documentation>",
        "```",
        "",
        "**<Short title of the issue>**",
        "",
        "<1–3 sentences explaining the problem and its consequence.>",
    ]
)


def build_mode_section(mode: ReviewMode) -> str:
    """The inline-comment format for ``review.mode``."""
    return ENHANCED_MODE_FORMAT if mode == "enhanced" else STANDARD_MODE_FORMAT


NOISE_SUPPRESSION = "\n".join(
    [
        "## Noise Suppression",
        "",
        "NEVER flag:",
        "- Style-only issues (formatting, whitespace, import order, naming preferences) that a formatter or "
        "linter would catch.",
        "- Speculative problems without a concrete failing scenario.",
        "- Missing comments or docstrings on self-explanatory code.",
        "- Changes that are clearly intentional and consistent with the rest of the codebase.",
        "- Issues in generated, vendored or lock files.",
        "When in doubt whether something is worth a comment, leave it out.",
    ]
)

FINDING_LANGUAGE_GUIDELINES = "\n".join(
    [
        "## Finding Language Guidelines",
        "",
        "Write every finding so the author knows WHAT is wrong, WHEN it happens and WHY it matters.",
        '- State the concrete effect: "causes [specific issue] when [specific condition]".',
        '- Avoid vague hedging such as "could potentially", "consider refactoring" or '
        '"this might have problems"; if you cannot name the failure, do not post the finding.',
        '- Do not pad findings with reassurance such as "preserves existing behavior", '
        '"backward compatible" or "minimal impact" unless that is the point of the finding.',
        '- Prefix optional, non-blocking suggestions with "Optional:".',
        "- Be direct and neutral; describe the code, not the author.",
    ]
)

AFTER_REVIEW = "\n".join(
    [
        "## After review",
        "",
        "When you have posted every inline comment (and the summary comment, when one is required), stop.",
        "If you found no issues, post nothing: no summary comment and no approval message.",
    ]
)
