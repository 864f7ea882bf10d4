"""Header, scale notes, PR description and changed-file list (behaviour R2.32 items 1–4)."""

from __future__ import annotations

from pydantic import BaseModel

from kodiai.compat.js import js_trim
from kodiai.text.sanitizer import sanitize_content

from .context import ReviewPromptContext
from .truncate import truncate_deterministic

MAX_TITLE_CHARS = 200
MAX_BODY_CHARS = 2000
MAX_CHANGED_FILES = 200


class PreparedPR(BaseModel):
    """Sanitised, truncated PR text plus what was cut (for the Scale Notes section)."""

    title: str
    body: str
    files: list[str]
    title_truncated: bool
    body_truncated: bool
    omitted_files: int
    extra_notes: list[str] = []


def code_unit_key(text: str) -> bytes:
    """Sort key equal to JS's default string order (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def prepare_pr(ctx: ReviewPromptContext) -> PreparedPR:
    """Sanitise and cap the title, body and file list."""
    title, title_cut = truncate_deterministic(sanitize_content(ctx.pr_title), MAX_TITLE_CHARS)
    body, body_cut = truncate_deterministic(js_trim(sanitize_content(ctx.pr_body or "")), MAX_BODY_CHARS)
    ordered = sorted(ctx.changed_files, key=code_unit_key)
    return PreparedPR(
        title=title,
        body=body,
        files=ordered[:MAX_CHANGED_FILES],
        title_truncated=title_cut,
        body_truncated=body_cut,
        omitted_files=max(0, len(ordered) - MAX_CHANGED_FILES),
        extra_notes=list(ctx.scale_notes),
    )


def build_header_section(ctx: ReviewPromptContext, pr: PreparedPR) -> str:
    """``You are reviewing pull request #N …`` with title, author, branches and labels."""
    lines = [
        f"You are reviewing pull request #{ctx.pr_number} in {ctx.owner}/{ctx.repo}.",
        "",
        f"Title: {pr.title}",
        f"Author: {ctx.pr_author}",
        f"Branches: {ctx.head_branch} -> {ctx.base_branch}",
    ]
    if ctx.pr_labels:
        lines.append(f"Labels: {', '.join(ctx.pr_labels)}")
    return "\n".join(lines)


def build_scale_notes_section(pr: PreparedPR) -> str:
    """``## Scale Notes``, only when something was cut."""
    notes: list[str] = []
    if pr.title_truncated:
        notes.append(f"- PR title truncated to {MAX_TITLE_CHARS} characters.")
    if pr.body_truncated:
        notes.append(f"- PR description truncated to {MAX_BODY_CHARS} characters.")
    if pr.omitted_files > 0:
        notes.append(
            f"- Changed file list capped at {MAX_CHANGED_FILES}; omitted {pr.omitted_files} more file(s)."
        )
    notes += [f"- {note}." for note in pr.extra_notes]
    if not notes:
        return ""
    return "\n".join(["## Scale Notes", "Some context was omitted due to scale guardrails:", *notes])


def build_description_section(pr: PreparedPR) -> str:
    """The PR body between ``---`` fences, only when it is non-empty after sanitising."""
    if not pr.body:
        return ""
    return "\n".join(["PR description:", "---", pr.body, "---"])


def build_changed_files_section(pr: PreparedPR) -> str:
    """``Changed files:`` with one ``- <path>`` line per file (sorted, capped)."""
    return "\n".join(["Changed files:", *(f"- {path}" for path in pr.files)])
