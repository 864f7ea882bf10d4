"""The learning pipeline's ambiguity signal in ``## Similar Prior Findings (Learning Context)``.

When the best match sits in a cluster of stored findings larger than ``top_k``, the section says the
examples shown are interchangeable. The note counts against ``maxContextChars``; without the signal, or
when it is not ambiguous, the section is exactly what it was.
"""

from __future__ import annotations

from typing import Any

from kodiai.compat.js import utf16_len
from kodiai.learning.ambiguity import AmbiguityConfig, AmbiguitySignal, ambiguity_signal
from kodiai.learning.types import LearningMemoryRecord, RerankedResult
from kodiai.review.prompt import RetrievalContext, build_retrieval_context, build_review_prompt
from kodiai.review.prompt.context import AmbiguityView
from kodiai.review.prompt.retrieval import build_retrieval_context_section
from kodiai.text.quoted_data import PAST_DATA_NOTE

PROVENANCE_LINE = "`(Prior pattern: [brief description of the similar prior finding])`"
AMBIGUOUS = {"cluster_size": 9, "pool_size": 40, "ambiguous": True}
NOTE = (
    "Note: 9 stored findings are about equally close to this PR, more than are shown; "
    "treat these as weak, interchangeable examples rather than a precise precedent."
)


def finding(text: str = "Unchecked null return") -> dict[str, Any]:
    return {
        "finding_text": text,
        "severity": "major",
        "category": "correctness",
        "file_path": "src/example.ts",
        "outcome": "accepted",
        "distance": 0.2,
    }


def section(findings: list[dict[str, Any]], ambiguity: Any = None, cap: int = 2000) -> str:
    return build_retrieval_context_section(
        RetrievalContext(findings=findings, max_context_chars=cap, ambiguity=ambiguity)
    )


def memory(i: int) -> RerankedResult:
    record = LearningMemoryRecord(
        repo="acme/repo",
        owner="acme",
        finding_id=i,
        review_id=1,
        source_repo="acme/repo",
        finding_text=f"Missing authorization check {i}",
        severity="major",
        category="security",
        file_path=f"src/api/h{i}.ts",
        outcome="accepted",
        embedding_model="m",
        embedding_dim=1024,
    )
    return RerankedResult(
        memory_id=i,
        distance=0.3,
        record=record,
        source_repo="acme/repo",
        adjusted_distance=0.3,
        language_match=True,
    )


def test_ambiguous_signal_adds_one_note_line_after_the_header() -> None:
    plain = section([finding()]).split("\n")
    noted = section([finding()], AMBIGUOUS).split("\n")
    at = plain.index(PROVENANCE_LINE) + 1
    assert noted == [*plain[:at], NOTE, *plain[at:]]
    # The note belongs to the header: the past-data line and the entries follow it.
    assert noted[at + 2 : at + 4] == [PAST_DATA_NOTE, "<prior_findings>"]
    assert noted[at + 4].startswith('- [major/correctness] "Unchecked null return"')


def test_no_note_without_signal_or_when_not_ambiguous() -> None:
    plain = section([finding()])
    assert "Note:" not in plain
    assert section([finding()], None) == plain
    assert section([finding()], {"cluster_size": 3, "pool_size": 40, "ambiguous": False}) == plain


def test_note_counts_against_max_context_chars() -> None:
    """The cap that fits the header and two entries fits one once the note is added, never more than the cap."""
    findings = [finding(f"finding {i} " + "x" * 200) for i in range(5)]
    header_and_two = utf16_len(section(findings[:2], cap=100_000))
    plain = section(findings, cap=header_and_two)
    noted = section(findings, AMBIGUOUS, cap=header_and_two)
    assert plain.count("\n- [") == 2
    assert noted.count("\n- [") == 1
    assert NOTE in noted
    assert utf16_len(noted) <= header_and_two
    for cap in range(500, 2000, 37):
        text = section(findings, AMBIGUOUS, cap=cap)
        assert utf16_len(text) <= cap
        assert text == "" or NOTE in text


def test_no_section_when_the_note_leaves_no_room_for_an_entry() -> None:
    """As with the header alone: no header (and no note) is shown without entries."""
    cap = utf16_len(section([finding()], cap=100_000))
    assert section([finding()], cap=cap) != ""
    assert section([finding()], AMBIGUOUS, cap=cap) == ""


def test_build_retrieval_context_takes_the_learning_signal() -> None:
    signal = ambiguity_signal([0.30, 0.31, 0.32, 0.33, 0.34, 1.2], 3, AmbiguityConfig())
    assert isinstance(signal, AmbiguitySignal)
    assert signal.ambiguous and signal.cluster_size == 5
    results = [memory(1), memory(2), memory(3)]
    ctx = build_retrieval_context(results, None, 2000, ambiguity=signal)
    assert ctx is not None
    assert ctx.ambiguity == AmbiguityView(cluster_size=5, pool_size=6, ambiguous=True)
    prompt = build_review_prompt(
        {
            "owner": "acme",
            "repo": "repo",
            "pr_number": 3,
            "pr_title": "Tweak",
            "pr_author": "alice",
            "base_branch": "main",
            "head_branch": "feature",
            "retrieval_context": ctx,
        }
    )
    assert "Note: 5 stored findings are about equally close to this PR, more than are shown;" in prompt
    unset = build_retrieval_context(results, None, 2000)
    assert unset is not None and unset.ambiguity is None
    assert "Note:" not in build_retrieval_context_section(unset)
    assert build_retrieval_context([], ambiguity=signal) is None
