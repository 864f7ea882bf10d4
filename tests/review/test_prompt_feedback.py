"""Team feedback in ``## Similar Prior Findings (Learning Context)`` (issue 14, a port addition).

A retrieved finding the team reacted to says so; one whose net feedback is negative is never listed as a
precedent but under "Rejected by the team" with an instruction not to raise it again. Without feedback
the section has the original's entries, each field quoted as data (issue 23).
"""

from __future__ import annotations

from typing import Any

import pytest

from kodiai.compat.js import utf16_len
from kodiai.review.prompt import RetrievalContext
from kodiai.review.prompt.retrieval import build_retrieval_context_section
from kodiai.storage.feedback_tally import FeedbackTally
from kodiai.text.quoted_data import PAST_DATA_NOTE

REJECTED_HEADING = "### Rejected by the team"


def finding(text: str, up: int = 0, down: int = 0) -> dict[str, Any]:
    return {
        "finding_text": text,
        "severity": "minor",
        "category": "style",
        "file_path": "src/a.py",
        "outcome": "accepted",
        "distance": 0.25,
        "feedback": FeedbackTally(thumbs_up=up, thumbs_down=down) if up or down else None,
    }


def section(findings: list[dict[str, Any]], cap: int = 2000) -> str:
    return build_retrieval_context_section(RetrievalContext(findings=findings, max_context_chars=cap))


@pytest.mark.parametrize(
    ("up", "down", "words"),
    [
        (1, 0, "confirmed"),
        (2, 0, "confirmed twice"),
        (0, 1, "rejected"),
        (0, 2, "rejected twice"),
        (0, 3, "rejected 3 times"),
        (1, 2, "confirmed once, rejected twice"),
        (0, 0, "no feedback"),
    ],
)
def test_tally_wording(up: int, down: int, words: str) -> None:
    assert FeedbackTally(thumbs_up=up, thumbs_down=down).describe() == words


def test_rejected_only_when_net_negative() -> None:
    assert FeedbackTally(thumbs_up=0, thumbs_down=1).rejected
    assert not FeedbackTally(thumbs_up=1, thumbs_down=1).rejected
    assert not FeedbackTally(thumbs_up=2, thumbs_down=1).rejected


def test_confirmed_finding_stays_a_precedent_and_says_so() -> None:
    text = section([finding("Use parameterised SQL", up=2)])
    assert (
        '- [minor/style] "Use parameterised SQL" (file: "src/a.py", outcome: accepted, distance: 0.250, '
        "team feedback: confirmed twice)" in text
    )
    assert REJECTED_HEADING not in text


def test_net_negative_finding_is_never_listed_as_precedent() -> None:
    text = section([finding("Prefer f-strings", down=2), finding("Check the return value", up=1)])
    precedent, rejected = text.split(REJECTED_HEADING)
    assert "Check the return value" in precedent and "Prefer f-strings" not in precedent
    assert (
        '- [minor/style] "Prefer f-strings" (file: "src/a.py", outcome: accepted, distance: 0.250, '
        "team feedback: rejected twice)" in rejected
    )
    assert "Do not raise the same concern again" in rejected
    # Header, blank line, the past-data line, the tagged entries, then the subsection with its own tags.
    assert f'`\n\n{PAST_DATA_NOTE}\n<prior_findings>\n- [minor/style] "Check the return value"' in precedent
    assert precedent.endswith("confirmed)\n</prior_findings>\n\n")
    assert '<rejected_prior_findings>\n- [minor/style] "Prefer f-strings"' in rejected
    assert rejected.endswith("</rejected_prior_findings>")


def test_only_rejected_findings_still_make_a_section() -> None:
    text = section([finding("Prefer f-strings", down=1)])
    assert text.startswith("## Similar Prior Findings (Learning Context)")
    assert f"`\n\n{PAST_DATA_NOTE}\n{REJECTED_HEADING}\n" in text
    assert "<prior_findings>" not in text
    assert text.endswith("team feedback: rejected)\n</rejected_prior_findings>")


def test_mixed_feedback_that_nets_zero_is_a_precedent_with_both_counts() -> None:
    text = section([finding("Close the file", up=1, down=1)])
    assert REJECTED_HEADING not in text
    assert "team feedback: confirmed once, rejected once" in text


def test_no_feedback_keeps_the_original_layout() -> None:
    plain = section([finding("A"), finding("B")])
    assert "team feedback" not in plain and REJECTED_HEADING not in plain
    assert plain.endswith('(file: "src/a.py", outcome: accepted, distance: 0.250)\n</prior_findings>')


def test_cap_counts_the_rejected_subsection() -> None:
    findings = [finding("Check the return value", up=1), finding("Prefer f-strings", down=1)]
    full = section(findings)
    # A cap just below the full text drops the rejected entry together with its subsection heading.
    cut = section(findings, cap=utf16_len(full) - 1)
    assert REJECTED_HEADING not in cut and "Check the return value" in cut
    assert utf16_len(cut) <= utf16_len(full) - 1
