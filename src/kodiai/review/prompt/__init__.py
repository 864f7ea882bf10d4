"""The review prompt (behaviour R2.32), split by section; ``build_review_prompt`` is the entry point."""

from .builder import build_review_prompt
from .context import (
    DeltaContext,
    DepBumpPromptContext,
    DiffAnalysisView,
    IncrementalContext,
    LargePRContext,
    PathInstructionMatch,
    RetrievalContext,
    RetrievedFinding,
    ReviewPromptContext,
)
from .path_instructions import build_path_instructions_section, match_path_instructions
from .retrieval import build_retrieval_context

__all__ = [
    "DeltaContext",
    "DepBumpPromptContext",
    "DiffAnalysisView",
    "IncrementalContext",
    "LargePRContext",
    "PathInstructionMatch",
    "RetrievalContext",
    "RetrievedFinding",
    "ReviewPromptContext",
    "build_path_instructions_section",
    "build_retrieval_context",
    "build_review_prompt",
    "match_path_instructions",
]
