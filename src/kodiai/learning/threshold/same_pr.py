"""The re-review scope: on a re-review, the memories of the PR's own earlier reviews are the precedent.

A ``synchronize`` review of a PR that Kodiai has reviewed before knows which reviews those were (the
knowledge DB's ``reviews`` rows of ``(repo, pr_number)``), and every learned memory carries the
``review_id`` it came from. Relevance on a re-review is "found on this PR before": no distance cut can
tell that apart from other PRs' findings on the same files (their distances overlap), but the review ids
can. :func:`retrieve_context(..., same_pr_review_ids=...) <kodiai.learning.pipeline.retrieve_context>`
fetches the PR's own memories by ``review_id`` (so one outside the vector pool is not missed) and
decides here, without I/O.

Modes (compared by ``kodiai eval retrieval --loo``; see docs/retrieval-quality.md):

- ``only`` (the default): the PR's own earlier memories, the ``top_k`` most similar, nothing from other
  PRs; when the PR has none, nothing (``same-pr:abstain``);
- ``first``: the PR's own memories first, then what the normal cut keeps from other PRs;
- ``fallback``: the PR's own memories when it has any, else what the normal cut keeps.

Within the scope similarity decides what is cut (``top_k`` by adjusted distance, before recency) and
recency only re-orders, as in ``headgap``. Without review ids (a first review) nothing here runs.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal, TypeVar

from kodiai.learning.threshold.pool import weighted_order
from kodiai.learning.threshold.types import (
    AdaptiveThresholdResult,
    Candidate,
    CutContext,
    CutDecision,
    NamedCut,
)
from kodiai.learning.types import RerankedResult, ThresholdMethod

SamePrMode = Literal["only", "first", "fallback"]
SAME_PR_MODES: tuple[SamePrMode, ...] = ("only", "first", "fallback")
DEFAULT_SAME_PR_MODE: SamePrMode = "only"
_Id = TypeVar("_Id", bound=Hashable)


def needs_normal_cut(mode: SamePrMode, own: int) -> bool:
    """Whether the normal cut's answer is used: always for ``first``, for ``fallback`` when the PR has no
    earlier memories, never for ``only``."""
    return mode == "first" or (mode == "fallback" and own == 0)


def same_pr_decide(
    own: Sequence[Candidate[_Id]], normal: Sequence[_Id], top_k: int, mode: SamePrMode
) -> tuple[list[_Id], ThresholdMethod]:
    """The ids kept, in final order, and the telemetry method.

    ``own``: the PR's own earlier memories, ascending adjusted distance (before recency), recency
    multipliers set. ``normal``: what the normal cut kept over the normal pool, in its order (ignored
    unless :func:`needs_normal_cut`). Methods: ``same-pr:kept`` (own memories only), ``same-pr:first``
    (own memories, then others), ``same-pr:fallback`` (no own memory; the normal cut answered),
    ``same-pr:abstain`` (no own memory, mode ``only``: nothing).
    """
    chosen = list(own)[:top_k]  # similarity decides the cut ...
    ids = [c.id for c in weighted_order(chosen)]  # ... recency only re-orders
    if not ids:
        if mode == "only":
            return [], "same-pr:abstain"
        return list(normal)[:top_k], "same-pr:fallback"
    if mode == "first":
        taken = set(ids)
        return [*ids, *(i for i in normal if i not in taken)][:top_k], "same-pr:first"
    return ids, "same-pr:kept"


class SamePrStrategy:
    """An evaluation handle: ``inner`` (the normal cut) run with the re-review scope in ``mode``.

    As a cut it behaves exactly as ``inner``, so on a first review (no review ids) the row equals the
    normal cut's. On a re-review the harness passes the query's same-PR review ids and ``mode`` to
    ``retrieve_context``, which applies the scope around ``inner``."""

    def __init__(
        self, inner: NamedCut, mode: SamePrMode = DEFAULT_SAME_PR_MODE, name: str | None = None
    ) -> None:
        self.inner = inner
        self.mode: SamePrMode = mode
        self.name = name or scoped_name(mode, inner.name)
        self.owns_recency = inner.owns_recency
        self.uses_lexical = inner.uses_lexical

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        return self.inner(reranked, ctx)


def scoped_name(mode: SamePrMode, inner: str) -> str:
    """The evaluation's row name: ``same-pr`` (only), ``same-pr-then-headgap`` (first: own memories, then
    the normal cut), ``same-pr-else-headgap`` (fallback: own memories, else the normal cut)."""
    if mode == "only":
        return "same-pr"
    return f"same-pr-{'then' if mode == 'first' else 'else'}-{inner}"


def threshold_of(
    kept: Sequence[RerankedResult], method: ThresholdMethod, pool: int
) -> AdaptiveThresholdResult:
    """The telemetry threshold of a scoped decision: the farthest kept adjusted distance (-1 when none)."""
    farthest = max((r.adjusted_distance for r in kept), default=-1.0)
    return AdaptiveThresholdResult(threshold=farthest, method=method, candidate_count=pool)
