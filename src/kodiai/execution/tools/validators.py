"""The three body validators of ``github_comment`` (behaviour E2.1.1–E2.1.3), pure.

Each validator applies only when its marker summary is present in the body and raises
:class:`CommentValidationError` otherwise-invalid bodies; the message goes back to the model as a tool
error and nothing is posted. The review-summary validator also strips legacy lines and reports
non-fatal warnings (the original printed them to the console).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kodiai.compat.js import js_trim, js_trim_end

DECISION_SUMMARY = "<summary>kodiai response</summary>"
REVIEW_SUMMARY = "<summary>Kodiai Review Summary</summary>"
REREVIEW_SUMMARY = "<summary>Kodiai Re-Review Summary</summary>"

_ISSUE_LINE = re.compile(r"^- \(\d+\) \[(?:critical|major|minor)\] .+ \(\d+(?:, \d+)*\): .+$")
_ISSUE_FORMAT = "- (1) [critical|major|minor] path/to/file.ts (123, 456): <issue>"

_CANONICAL = ["## What Changed", "## Strengths", "## Observations", "## Suggestions", "## Verdict"]
_REQUIRED = ["## What Changed", "## Observations", "## Verdict"]
_VERDICT_LINE = re.compile(r"^:(green_circle|yellow_circle|red_circle): \*\*[^*]+\*\* -- .+$")
_FINDING_LINE = re.compile(
    r"^\[(CRITICAL|MAJOR|MEDIUM|MINOR)\] .+ \(\d+(?:-\d+)?(?:,\s*\d+(?:-\d+)?)*\): .+$"
)
_LEGACY_PREFIXES = ("**What changed:**", "**Issues found:**", "**Note:**")

_DELTA_REQUIRED = ["## Re-review", "## What Changed", "## Verdict Update"]
_DELTA_SECTIONS = ["## New Findings", "## Resolved Findings", "## Still Open"]
_DELTA_FORBIDDEN = ["## Observations", "## Strengths", "## Suggestions"]
_DELTA_ALLOWED = {
    "## What Changed",
    "## New Findings",
    "## Resolved Findings",
    "## Still Open",
    "## Verdict Update",
}
_DELTA_VERDICT_LINE = re.compile(r"^:(green_circle|yellow_circle|large_blue_circle): \*\*[^*]+\*\* -- .+$")


class CommentValidationError(ValueError):
    """A comment body that does not follow the format its summary tag announces."""


@dataclass
class ValidatedBody:
    """The body to post (possibly modified) and non-fatal warnings for the log."""

    body: str
    warnings: list[str] = field(default_factory=list)


def _decision_value(line: str) -> str:
    # JS ``line.split(":", 2)[1]``: the text between the first and the second colon.
    parts = line.split(":")
    return js_trim(parts[1]) if len(parts) > 1 else ""


def _details_inner_lines(lines: list[str]) -> list[str]:
    open_idx = next((i for i, ln in enumerate(lines) if js_trim(ln) == "<details>"), -1)
    close_idx = next((i for i, ln in enumerate(lines) if js_trim(ln) == "</details>"), -1)
    if open_idx != -1 and close_idx != -1 and close_idx > open_idx:
        return lines[open_idx + 1 : close_idx]
    return lines


def validate_decision_response(body: str) -> None:
    """E2.1.1: the mention decision format (``Decision: APPROVE`` / ``NOT APPROVED``)."""
    if DECISION_SUMMARY not in body or "Decision:" not in body:
        return
    content = [js_trim_end(ln) for ln in _details_inner_lines(body.split("\n"))]
    content = [ln for ln in content if ln and not ln.startswith("<summary>")]
    decision_line = next((ln for ln in content if ln.startswith("Decision:")), None)
    if decision_line is None:
        raise CommentValidationError("Invalid kodiai response: missing Decision line")
    decision = _decision_value(decision_line)
    if decision not in ("APPROVE", "NOT APPROVED"):
        raise CommentValidationError("Invalid kodiai response: Decision must be 'APPROVE' or 'NOT APPROVED'")
    if decision == "APPROVE":
        if "Issues: none" not in content:
            raise CommentValidationError("Invalid kodiai response: APPROVE requires a line 'Issues: none'")
        others = list(content)
        others.remove(decision_line)
        extra = [ln for ln in others if ln != "Issues: none"]
        if extra:
            raise CommentValidationError(
                "Invalid kodiai response: APPROVE must contain only 'Decision: APPROVE' and 'Issues: none'"
            )
        return
    if "Issues: none" in content:
        raise CommentValidationError("Invalid kodiai response: NOT APPROVED cannot use 'Issues: none'")
    if "Issues:" not in content:
        raise CommentValidationError("Invalid kodiai response: NOT APPROVED requires a line 'Issues:'")
    for ln in content:
        if not (ln.startswith("Decision:") or ln.startswith("Issues:") or ln.startswith("-")):
            raise CommentValidationError(
                f"Invalid kodiai response: unexpected line '{ln}'; expected issue lines like '{_ISSUE_FORMAT}'"
            )
    issues = [ln for ln in content[content.index("Issues:") + 1 :] if ln.startswith("-")]
    if not issues:
        raise CommentValidationError("Invalid kodiai response: NOT APPROVED requires at least one issue line")
    for ln in issues:
        if not _ISSUE_LINE.match(ln):
            raise CommentValidationError(
                f"Invalid kodiai response: issue line must use format '{_ISSUE_FORMAT}'; got '{ln}'"
            )


def _strip_legacy_lines(body: str) -> str:
    kept = []
    for ln in body.split("\n"):
        t = js_trim(ln)
        if t.startswith(_LEGACY_PREFIXES) or t.lower().startswith("what changed:"):
            continue
        kept.append(ln)
    return "\n".join(kept)


def _observations_lines(body: str) -> list[str]:
    rest = body[body.index("## Observations") + len("## Observations") :]
    out: list[str] = []
    for ln in rest.split("\n")[1:]:
        if js_trim(ln).startswith("## "):
            break
        out.append(ln)
    return out


def _check_observations(body: str, warnings: list[str]) -> int:
    """Run the Observations state machine; return the number of blockers under Impact."""
    subsection: str | None = None
    awaiting = False
    impact_findings = 0
    blockers = 0

    def missing() -> CommentValidationError:
        return CommentValidationError(
            f"Invalid Kodiai review summary: missing explanation line after finding in {subsection}"
        )

    for ln in _observations_lines(body):
        t = js_trim(ln)
        if t.startswith("### "):
            if awaiting:
                raise missing()
            if t in ("### Impact", "### Preference"):
                subsection = t
            elif subsection is not None:
                raise CommentValidationError(f"Invalid Kodiai review summary: unexpected subsection '{t}'")
            continue
        if subsection is None:
            continue
        match = _FINDING_LINE.match(t.replace("**", ""))
        if match:
            if awaiting:
                raise missing()
            awaiting = True
            severity = match.group(1)
            if subsection == "### Impact":
                impact_findings += 1
                blockers += severity in ("CRITICAL", "MAJOR")
            elif severity in ("CRITICAL", "MAJOR"):
                warnings.append(f"{severity} finding under ### Preference; preferences are capped at MEDIUM")
        elif t == "":
            if awaiting:
                raise missing()
        else:
            awaiting = False
    if awaiting:
        raise missing()
    if impact_findings == 0:
        raise CommentValidationError(
            "Invalid Kodiai review summary: Observations must contain ### Impact subsection with at least "
            "one severity-tagged finding"
        )
    return blockers


def sanitize_review_summary(body: str) -> ValidatedBody:
    """E2.1.2: strip legacy lines, then enforce the five-section review summary layout."""
    if REVIEW_SUMMARY not in body:
        return ValidatedBody(body)
    body = _strip_legacy_lines(body)
    warnings: list[str] = []
    for section in _REQUIRED:
        if section not in body:
            raise CommentValidationError(
                f"Invalid Kodiai review summary: missing required section '{section}'"
            )
    positions = [body.index(s) for s in _CANONICAL if s in body]
    if positions != sorted(positions):
        raise CommentValidationError(
            "Invalid Kodiai review summary: sections must appear in order "
            "What Changed, Strengths, Observations, Suggestions, Verdict"
        )
    for ln in body.split("\n"):
        t = js_trim(ln)
        if t.startswith("## ") and t not in _CANONICAL:
            raise CommentValidationError(f"Invalid Kodiai review summary: unexpected section '{t}'")
    verdict_region = body[body.index("## Verdict") :].split("\n")
    verdict = next((m for m in (_VERDICT_LINE.match(js_trim(ln)) for ln in verdict_region) if m), None)
    if verdict is None:
        raise CommentValidationError(
            "Invalid Kodiai review summary: Verdict must use format "
            "':green_circle: **<label>** -- <text>' (or :yellow_circle: / :red_circle:)"
        )
    blockers = _check_observations(body, warnings)
    colour = verdict.group(1)
    if colour == "red_circle" and blockers == 0:
        raise CommentValidationError(
            "Invalid Kodiai review summary: Verdict is :red_circle: but no CRITICAL or MAJOR findings exist "
            "under ### Impact"
        )
    if colour == "green_circle" and blockers > 0:
        warnings.append(f"Verdict is :green_circle: but {blockers} blocker(s) exist under ### Impact")
    return ValidatedBody(body, warnings)


def validate_rereview_summary(body: str) -> None:
    """E2.1.3: the delta re-review summary layout (body unchanged)."""
    if REREVIEW_SUMMARY not in body:
        return
    for section in _DELTA_REQUIRED:
        if section not in body:
            raise CommentValidationError(
                f"Invalid Kodiai re-review summary: missing required section '{section}'"
            )
    if not any(s in body for s in _DELTA_SECTIONS):
        raise CommentValidationError(
            "Invalid Kodiai re-review summary: must contain at least one of: New Findings, Resolved Findings, "
            "Still Open"
        )
    for section in _DELTA_FORBIDDEN:
        if section in body:
            raise CommentValidationError(f"Invalid Kodiai re-review summary: unexpected section '{section}'")
    region = body[body.index("## Verdict Update") :].split("\n")
    if not any(_DELTA_VERDICT_LINE.match(js_trim(ln)) for ln in region):
        raise CommentValidationError(
            "Invalid Kodiai re-review summary: Verdict Update must use format "
            "':green_circle: **<label>** -- <text>' (or :yellow_circle: / :large_blue_circle:)"
        )
    for ln in body.split("\n"):
        t = js_trim(ln)
        if t.startswith("## ") and not t.startswith("## Re-review") and t not in _DELTA_ALLOWED:
            raise CommentValidationError(f"Invalid Kodiai re-review summary: unexpected section '{t}'")


def validate_comment_body(body: str) -> ValidatedBody:
    """The full ``github_comment`` chain: decision → review summary → re-review."""
    validate_decision_response(body)
    validated = sanitize_review_summary(body)
    validate_rereview_summary(validated.body)
    return validated


def validate_thread_decision(wrapped: str) -> None:
    """E2.2: the light APPROVE check of thread replies (``Issues: none`` before ``</details>``)."""
    if DECISION_SUMMARY not in wrapped or "Decision:" not in wrapped:
        return
    lines = wrapped.split("\n")
    close_idx = next((i for i, ln in enumerate(lines) if js_trim(ln) == "</details>"), -1)
    if close_idx == -1:
        return
    decision_line = next((js_trim(ln) for ln in lines if js_trim(ln).startswith("Decision:")), None)
    if decision_line is None or _decision_value(decision_line) != "APPROVE":
        return
    if not any(js_trim(ln) == "Issues: none" for ln in lines[:close_idx]):
        raise CommentValidationError("Invalid kodiai response: APPROVE requires a line 'Issues: none'")
