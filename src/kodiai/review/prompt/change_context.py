"""Change Context, Large PR Triage and Incremental Review Mode sections (R2.32 items 5–7)."""

from __future__ import annotations

from kodiai.text.quoted_data import PAST_DATA_NOTE, data_token, quote_data

from .context import DiffAnalysisView, IncrementalContext, LargePRContext

MAX_INCREMENTAL_FILES = 50
MAX_UNRESOLVED_FINDINGS = 10

# The "Reviewed:" line names categories in human words; unknown category keys are shown verbatim.
CATEGORY_LABELS = {
    "source": "core logic",
    "test": "tests",
    "config": "config",
    "docs": "docs",
    "infra": "infrastructure",
}


def build_diff_analysis_section(
    analysis: DiffAnalysisView | None, *, has_large_pr_context: bool = False
) -> str:
    """``## Change Context``: size, hunks, category breakdown and risk signals; "" for zero files."""
    if analysis is None or analysis.metrics.total_files <= 0:
        return ""
    m = analysis.metrics
    sentence = (
        f"This PR modifies {m.total_files} files (+{m.total_lines_added} / -{m.total_lines_removed} lines)"
    )
    if m.hunks_count > 0:
        sentence += f" across {m.hunks_count} hunks"
    lines = ["## Change Context", "", sentence + "."]
    if analysis.is_large_pr and not has_large_pr_context:
        lines.append("This is a large PR. Focus on the most critical changes.")
    breakdown = [
        f"- {category}: {len(files)} file(s)"
        for category, files in analysis.files_by_category.items()
        if files
    ]
    if breakdown:
        lines += ["", "File breakdown:", *breakdown]
    if analysis.risk_signals:
        lines += ["", "Pay special attention to these areas:", *(f"- {s}" for s in analysis.risk_signals)]
    return "\n".join(lines)


def build_reviewed_categories_line(files_by_category: dict[str, list[str]]) -> str:
    """``Reviewed: core logic, tests, …`` over the non-empty categories in map order; "" when none."""
    names = [CATEGORY_LABELS.get(key, key) for key, files in files_by_category.items() if files]
    return f"Reviewed: {', '.join(names)}" if names else ""


def build_large_pr_triage_section(large: LargePRContext | None) -> str:
    """``## Large PR Triage``: the full and abbreviated tiers and the count left out."""
    if large is None:
        return ""
    lines = [
        "## Large PR Triage",
        "",
        f"This PR contains {large.total_files} files. Files have been prioritized by risk score for "
        "efficient review.",
    ]
    if large.full_review_files:
        lines += [
            "",
            f"### Full Review ({len(large.full_review_files)} files)",
            "Review these files thoroughly for all issue categories:",
            *(f"- {path}" for path in large.full_review_files),
        ]
    if large.abbreviated_files:
        lines += [
            "",
            f"### Abbreviated Review ({len(large.abbreviated_files)} files)",
            "For these files, ONLY flag CRITICAL and MAJOR issues. Skip MEDIUM and MINOR findings.",
            *(f"- {path}" for path in large.abbreviated_files),
        ]
    if large.mention_only_count > 0:
        lines += [
            "",
            f"{large.mention_only_count} additional file(s) were not included for review (lower risk score).",
        ]
    return "\n".join(lines)


def build_incremental_review_section(incremental: IncrementalContext | None) -> str:
    """``## Incremental Review Mode``: the files changed since the last reviewed commit."""
    if incremental is None:
        return ""
    files = incremental.changed_files_since_last_review
    sha7 = incremental.last_reviewed_head_sha[:7]
    lines = [
        "## Incremental Review Mode",
        "",
        f"This is an incremental re-review. The last review covered commit {sha7}. "
        f"Focus ONLY on changes in these {len(files)} files:",
        *(f"- {path}" for path in files[:MAX_INCREMENTAL_FILES]),
    ]
    if len(files) > MAX_INCREMENTAL_FILES:
        lines.append(f"- ...({len(files) - MAX_INCREMENTAL_FILES} more files omitted)")
    prior = incremental.unresolved_prior_findings
    if prior:
        lines += [
            "",
            "### Unresolved Prior Findings (Context Only)",
            "These findings from the previous review are on code that has not changed since. "
            "Do NOT re-comment on them; they are listed only so you do not repeat them.",
            PAST_DATA_NOTE,
            *(
                f"- [{data_token(f.severity)}] {quote_data(f.title)} ({quote_data(f.file_path)})"
                for f in prior[:MAX_UNRESOLVED_FINDINGS]
            ),
        ]
        if len(prior) > MAX_UNRESOLVED_FINDINGS:
            lines.append(f"- ...({len(prior) - MAX_UNRESOLVED_FINDINGS} more findings omitted)")
    return "\n".join(lines)
