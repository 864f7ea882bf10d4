"""Property tests for the prompt's caps and truncation (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kodiai.compat.js import JS_WHITESPACE
from kodiai.review.prompt import PathInstructionMatch, RetrievalContext, build_path_instructions_section
from kodiai.review.prompt.retrieval import build_retrieval_context_section
from kodiai.review.prompt.truncate import TRUNCATED_MARKER, truncate_deterministic, truncate_to_char_budget

bmp_text = st.text(alphabet=st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)), max_size=300)

findings = st.lists(
    st.fixed_dictionaries(
        {
            "finding_text": bmp_text,
            "severity": st.sampled_from(["critical", "major", "medium", "minor"]),
            "category": st.sampled_from(["security", "style"]),
            "file_path": st.text(min_size=1, max_size=40),
            "outcome": st.sampled_from(["accepted", "suppressed"]),
            "distance": st.floats(min_value=0, max_value=2),
            "confidence": st.none() | st.sampled_from(["high", "medium", "low"]),
        }
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(findings, st.integers(min_value=0, max_value=5000))
def test_retrieval_section_never_exceeds_cap(items: list[dict[str, object]], cap: int) -> None:
    section = build_retrieval_context_section(
        RetrievalContext.model_validate({"findings": items, "max_context_chars": cap})
    )
    assert len(section) <= cap
    if section:
        assert section.count("\n- [") >= 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=30),
            bmp_text,
            st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=8),
        ),
        max_size=10,
    ),
    st.integers(min_value=200, max_value=4000),
)
def test_path_section_never_exceeds_cap(entries: list[tuple[str, str, list[str]]], cap: int) -> None:
    matches = [PathInstructionMatch(path=p, instructions=i, matched_files=f) for p, i, f in entries]
    assert len(build_path_instructions_section(matches, max_chars=cap)) <= cap


@settings(max_examples=100, deadline=None)
@given(bmp_text, st.integers(min_value=1, max_value=400))
def test_truncate_deterministic_invariants(text: str, limit: int) -> None:
    out, cut = truncate_deterministic(text, limit)
    if len(text) <= limit:
        assert (out, cut) == (text, False)
    else:
        assert cut
        head = out.removesuffix("\n" + TRUNCATED_MARKER)
        assert text.startswith(head)
        assert len(head) <= limit
        assert not head or head[-1] not in JS_WHITESPACE


@settings(max_examples=100, deadline=None)
@given(bmp_text, st.integers(min_value=1, max_value=400))
def test_truncate_to_char_budget_keeps_a_prefix(text: str, limit: int) -> None:
    out = truncate_to_char_budget(text, limit)
    if len(text) <= limit:
        assert out == text
    else:
        head = out.removesuffix("\n...(truncated)")
        assert text.startswith(head)
        assert len(head) <= limit
