"""Summary-comment instructions: enhanced note, standard template, delta re-review (R2.32 item 29, R3.2, R3.3)."""

from __future__ import annotations

from kodiai.text.quoted_data import PAST_DATA_NOTE, data_token, quote_data

from .context import DeltaContext

MAX_DELTA_FILES = 50
MAX_DELTA_FINDINGS = 30

ENHANCED_SUMMARY_NOTE = "\n".join(
    [
        "## Summary Comment",
        "",
        "Do NOT post a top-level summary comment. In enhanced mode every finding is an inline comment with its "
        "YAML metadata block; the bot adds the review details itself.",
    ]
)


def build_standard_summary_section(reviewed_line: str = "") -> str:
    """The five-section summary template, the Verdict Logic and the hard requirements."""
    what_changed = ["## What Changed", "<1-2 sentences describing what this PR does>"]
    if reviewed_line:
        what_changed.append(reviewed_line)
    template = [
        "<details>",
        "<summary>Kodiai Review Summary</summary>",
        "",
        *what_changed,
        "",
        "## Strengths",
        "- :white_check_mark: <a specific positive you verified in the code>",
        "",
        "## Observations",
        "",
        "### Impact",
        "[CRITICAL] path/to/file.ts (123, 456): <issue title>",
        "<one or two lines explaining the consequence>",
        "",
        "[MAJOR] path/to/other.ts (78-80): <issue title>",
        "<one or two lines explaining the consequence>",
        "",
        "### Preference",
        "[MINOR] path/to/file.ts (101): <issue title>",
        "Optional: <the suggested change>",
        "",
        "## Suggestions",
        "- Optional: <low-friction cleanup that is safe to skip>",
        "- Future consideration: <larger improvement for a later PR>",
        "",
        "## Verdict",
        ":red_circle: **Address before merging** -- [N] blocking issue(s) found",
        "</details>",
    ]
    verdict_logic = [
        "## Verdict Logic",
        "",
        'A "blocker" is any finding with severity CRITICAL or MAJOR under ### Impact.',
        "Pick exactly one verdict line:",
        "1. Count the number of [CRITICAL] and [MAJOR] findings under ### Impact.",
        "2. If count > 0: `:red_circle: **Address before merging** -- [N] blocking issue(s) found`",
        "3. If count == 0 AND there are non-blocking findings (MEDIUM/MINOR findings or Preference items): "
        "`:yellow_circle: **Ready to merge with minor items** -- Optional cleanup suggestions below`",
        "4. If count == 0 AND there are no findings at all: "
        "`:green_circle: **Ready to merge** -- No blocking issues found`",
    ]
    requirements = [
        "### Hard requirements for the summary comment",
        "- Use exactly the headings of the template, in that order; Strengths and Suggestions are optional.",
        "- ### Impact is REQUIRED and must contain at least one finding; ### Preference is optional.",
        "- CRITICAL and MAJOR findings MUST go under ### Impact. Preference findings are capped at MEDIUM "
        'severity and their prose starts with "Optional:".',
        "- Every finding line has the form `[SEVERITY] path (lines): title` and is followed by an explanation line.",
        "- The Verdict must be one of the three lines above; determine which one using the Verdict Logic rules "
        "above.",
        "- Zero blockers = :green_circle: or :yellow_circle: verdict. Never :red_circle: without blockers.",
        "- Under ## Suggestions every item MUST start with 'Optional:' or 'Future consideration:'; suggestions "
        "are NEVER counted against merge readiness.",
    ]
    return "\n".join(
        [
            "## Summary Comment",
            "",
            "If you found issues, post ONE summary comment with the `create_comment` tool, using this template:",
            "",
            *template,
            "",
            *verdict_logic,
            "",
            *requirements,
        ]
    )


def build_delta_context_section(delta: DeltaContext) -> str:
    """``## Delta Review Context``: what changed since the last review and what it found."""
    sha7 = delta.last_reviewed_head_sha[:7]
    files = delta.changed_files_since_last_review
    lines = [
        "## Delta Review Context",
        "",
        f"This is a re-review. The previous review covered commit {sha7}.",
        f"Files changed since the last review ({len(files)}):",
        *(f"- {path}" for path in files[:MAX_DELTA_FILES]),
    ]
    if len(files) > MAX_DELTA_FILES:
        lines.append(f"- ...({len(files) - MAX_DELTA_FILES} more files omitted)")
    prior = delta.prior_findings
    lines += [
        "",
        f"Prior review findings ({len(prior)}):",
        PAST_DATA_NOTE,
        *(
            f"- [{data_token(f.severity.upper())}] {quote_data(f.file_path)}: {quote_data(f.title)}"
            for f in prior[:MAX_DELTA_FINDINGS]
        ),
    ]
    if len(prior) > MAX_DELTA_FINDINGS:
        lines.append(f"- ...({len(prior) - MAX_DELTA_FINDINGS} more findings omitted)")
    lines += [
        "",
        "Classify every finding against the prior review:",
        "- NEW: an issue that was not in the prior findings.",
        "- RESOLVED: a prior finding that the new changes fixed.",
        "- STILL OPEN: a prior finding that still applies.",
    ]
    return "\n".join(lines)


def build_delta_summary_section(delta: DeltaContext) -> str:
    """Delta context, the re-review template, the Verdict Update Logic and its hard requirements."""
    sha7 = delta.last_reviewed_head_sha[:7]
    template = [
        "<details>",
        "<summary>Kodiai Re-Review Summary</summary>",
        "",
        f"## Re-review -- Changes since {sha7}",
        "",
        "## What Changed",
        "<1-2 sentences describing what changed since the last review>",
        "",
        "## New Findings",
        ":new: [CRITICAL] path/to/file.ts (123): <issue title>",
        "<one or two lines explaining the consequence>",
        "",
        "## Resolved Findings",
        ":white_check_mark: [MAJOR] path/to/file.ts: <issue title> -- resolved",
        "",
        "## Still Open",
        "<count> finding(s) from the previous review remain open.",
        "",
        "<details>",
        "<summary>View still-open findings</summary>",
        "",
        "- [MEDIUM] path/to/file.ts: <issue title>",
        "",
        "</details>",
        "",
        "## Verdict Update",
        ":green_circle: **Blockers resolved** -- Ready to merge",
        "</details>",
    ]
    logic = [
        "## Verdict Update Logic",
        "",
        "- :green_circle: **Blockers resolved** -- Ready to merge: the prior blockers are resolved and there are "
        "no new CRITICAL or MAJOR findings.",
        "- :yellow_circle: **New blockers found** -- Address [N] new issue(s): new CRITICAL or MAJOR findings exist.",
        "- :large_blue_circle: **Still ready** -- No new issues: nothing blocking before, nothing new now.",
        "",
        "### Hard requirements for the re-review summary",
        "- Use exactly the headings of the template: ## Re-review, ## What Changed and ## Verdict Update are "
        "required.",
        "- Of ## New Findings, ## Resolved Findings and ## Still Open, include only those with content; at least "
        "one must be present.",
        "- Do not use any other ## heading.",
        "- The Verdict Update must be one of the three lines above.",
    ]
    return "\n".join(
        [
            build_delta_context_section(delta),
            "",
            "## Re-review Summary Comment",
            "",
            "Post ONE re-review summary comment with the `create_comment` tool, using this template:",
            "",
            *template,
            "",
            *logic,
        ]
    )
