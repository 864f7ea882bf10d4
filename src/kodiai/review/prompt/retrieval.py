"""``## Similar Prior Findings (Learning Context)`` (R2.32 item 8, with the Q13 fix).

Each retrieved memory is listed with severity, category, text, path, outcome, distance and, when the
learning pipeline supplied one, its confidence label. The section is capped at
``knowledge.retrieval.maxContextChars`` (the original always used 2000, ignoring the setting).
A cap of 0 turns the section off. Entries are added in order while the whole section stays within the
cap; when not even the first entry fits, the section is left out rather than shown empty.

When the learning pipeline's ambiguity signal says the best match sits in a cluster larger than ``top_k``,
one note line follows the header: the entries shown are near-arbitrary picks from that cluster. The note is
part of the header, so it counts against the cap (and can leave room for one entry fewer).

Port addition: a finding the team reacted to carries ``team feedback: confirmed / rejected twice``; one whose
net feedback is negative is never listed as precedent but under "Rejected by the team", with an instruction
not to raise it again.

Security over parity (issue 23): every stored field reaches the prompt as quoted data. Finding text and file
path are JSON string literals (:func:`kodiai.text.quoted_data.quote_data`: one line, ``<``/``>``/backticks
escaped), severity, category and outcome are bare only when they are plain words, and the entries sit
inside ``<prior_findings>`` / ``<rejected_prior_findings>`` tags after a line saying they are past data,
not instructions. A finding text with a newline and a ``## …`` heading therefore stays one entry line. The
original pasted the fields raw, one ``- [sev/cat] text (…)`` line each.
"""

from __future__ import annotations

from collections.abc import Sequence

from kodiai.compat.js import to_fixed, utf16_len
from kodiai.storage.feedback_tally import FeedbackTally
from kodiai.text.quoted_data import PAST_DATA_NOTE, data_token, quote_data

from .context import AmbiguityView, RetrievalContext, RetrievedFinding

DEFAULT_MAX_CONTEXT_CHARS = 2000
PRECEDENT_TAG = "prior_findings"
REJECTED_TAG = "rejected_prior_findings"

_HEADER = [
    "## Similar Prior Findings (Learning Context)",
    "",
    "These findings were reported in earlier reviews of code similar to this PR. Use them to calibrate what "
    "this codebase cares about; do not repeat them unless the same problem exists in this diff.",
    "When a finding in your review directly relates to one of these prior findings, append a brief "
    "provenance note at the end of that comment in this form:",
    "`(Prior pattern: [brief description of the similar prior finding])`",
    "",
]

_REJECTED_HEADER = [
    "",
    "### Rejected by the team",
    "",
    "The team reacted with more thumbs-down than thumbs-up to these earlier findings: they are not precedent. "
    "Do not raise the same concern again unless this diff gives clear new evidence that it is a real defect, "
    "and never cite them as a prior pattern.",
    "",
]


def build_retrieval_context(
    results: Sequence[object],
    labels: Sequence[str] | None = None,
    max_context_chars: int | float = DEFAULT_MAX_CONTEXT_CHARS,
    ambiguity: object | None = None,
    feedback: Sequence[FeedbackTally | None] | None = None,
) -> RetrievalContext | None:
    """Turn the learning pipeline's final results (``RerankedResult``: ``.record``, ``.adjusted_distance``)
    and its optional per-result confidence labels into the prompt's retrieval input (R1 step 32.8).

    The distance shown is the adjusted (post-rerank, post-recency) distance. ``ambiguity`` is the pipeline's
    ``AmbiguitySignal`` (or anything with ``cluster_size``, ``pool_size``, ``ambiguous``), None when
    ``knowledge.retrieval.ambiguitySignal`` is off. No results → None.
    """
    if not results:
        return None
    if labels is not None and len(labels) != len(results):
        raise ValueError(f"{len(labels)} confidence labels for {len(results)} retrieval results")
    if feedback is not None and len(feedback) != len(results):
        raise ValueError(f"{len(feedback)} feedback tallies for {len(results)} retrieval results")
    findings = []
    for index, result in enumerate(results):
        record = getattr(result, "record", None)
        if record is None:
            raise ValueError("retrieval result has no record")
        findings.append(
            RetrievedFinding.model_validate(
                {
                    "finding_text": getattr(record, "finding_text", ""),
                    "severity": getattr(record, "severity", ""),
                    "category": getattr(record, "category", ""),
                    "file_path": getattr(record, "file_path", ""),
                    "outcome": getattr(record, "outcome", ""),
                    "distance": getattr(result, "adjusted_distance", getattr(result, "distance", 0.0)),
                    "source_repo": getattr(result, "source_repo", None),
                    "confidence": labels[index] if labels is not None else None,
                    "feedback": feedback[index] if feedback is not None else None,
                }
            )
        )
    return RetrievalContext(
        findings=findings,
        max_context_chars=max_context_chars,
        ambiguity=AmbiguityView.model_validate(ambiguity) if ambiguity is not None else None,
    )


def ambiguity_note(ambiguity: AmbiguityView | None) -> str | None:
    """The header's note line when the shown findings are an arbitrary pick from a larger cluster, else None."""
    if ambiguity is None or not ambiguity.ambiguous:
        return None
    return (
        f"Note: {ambiguity.cluster_size} stored findings are about equally close to this PR, more than are "
        "shown; treat these as weak, interchangeable examples rather than a precise precedent."
    )


def format_retrieved_finding(finding: RetrievedFinding) -> str:
    """``- [sev/cat] "text" (file: "path", outcome: o, distance: d[, confidence: c])``, every stored field
    quoted or a plain word, so the entry is exactly one line whatever the memory holds."""
    details = [
        f"file: {quote_data(finding.file_path)}",
        f"outcome: {data_token(finding.outcome)}",
        f"distance: {to_fixed(finding.distance, 3)}",
    ]
    if finding.confidence is not None:
        details.append(f"confidence: {finding.confidence}")
    if finding.feedback is not None and not finding.feedback.empty:
        details.append(f"team feedback: {finding.feedback.describe()}")
    label = f"{data_token(finding.severity)}/{data_token(finding.category)}"
    return f"- [{label}] {quote_data(finding.finding_text)} ({', '.join(details)})"


def build_retrieval_context_section(retrieval: RetrievalContext | None) -> str:
    """The learning-context section, or "" when there is nothing (or no room) to show."""
    if retrieval is None or not retrieval.findings or retrieval.max_context_chars <= 0:
        return ""
    budget = retrieval.max_context_chars
    note = ambiguity_note(retrieval.ambiguity)
    header = _HEADER if note is None else [*_HEADER[:-1], note, _HEADER[-1]]
    precedent: list[str] = []
    rejected: list[str] = []
    text = ""
    for finding in retrieval.findings:
        group = rejected if finding.feedback is not None and finding.feedback.rejected else precedent
        group.append(format_retrieved_finding(finding))
        candidate = _assemble(header, precedent, rejected)
        if utf16_len(candidate) > budget:
            group.pop()
            break
        text = candidate
    return text


def _assemble(header: list[str], precedent: list[str], rejected: list[str]) -> str:
    """Header, the past-data note, then each group's entries inside its tags."""
    lines = [*header, PAST_DATA_NOTE]
    if precedent:
        lines += [f"<{PRECEDENT_TAG}>", *precedent, f"</{PRECEDENT_TAG}>"]
    if rejected:
        lines += _REJECTED_HEADER if precedent else _REJECTED_HEADER[1:]
        lines += [f"<{REJECTED_TAG}>", *rejected, f"</{REJECTED_TAG}>"]
    return "\n".join(lines)
