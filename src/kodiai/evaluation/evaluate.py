"""One evaluation end to end: data → cached embeddings → the chain per strategy → metrics per strategy.

Every strategy is judged by the same metric code (:mod:`kodiai.evaluation.metrics`) over the same
queries. The cut scale is named once (:mod:`kodiai.learning.cut_strategy`): ``headgap`` and the ``fixed:T``
baselines cut on the *adjusted* distance (language rerank, before recency) and order what they keep by
the recency-adjusted distance; ``fixed@recency:T`` cuts on the recency-adjusted distance (the original's
order) and ``maxgap`` is the original's cut, unchanged, on that scale. The fixed grids run from 0.05 to
the largest distance their scale can produce (2 × the cross-language penalty, times the largest recency
multiplier for ``fixed@recency``), so the last threshold of each keeps every candidate.

After the chain has run, every strategy whose decision is a pure function of the pool is replayed on the
captured pools and must keep exactly what the chain kept: calibration and leave-one-out use those replays.

On the re-review track every query is a re-review, so the strategies that carry the re-review scope
(:class:`kodiai.learning.same_pr.SamePrStrategy`: ``same-pr``, ``same-pr-then-headgap``, ``same-pr-else-headgap``)
are added and the track's default is ``same-pr`` — what the review handler runs on a re-review. Track A's
queries are first reviews: its default stays the model's cut and the scoped rows are not shown there.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from kodiai.evaluation.calibration import LabelledPool
from kodiai.evaluation.data import EvalDataset
from kodiai.evaluation.defaults import BOOTSTRAP_REPS
from kodiai.evaluation.embedding_cache import EmbeddingCache
from kodiai.evaluation.metrics import QueryJudgement, StrategyMetrics, with_intervals
from kodiai.evaluation.runner import ChainOptions, ScopedPool, run_chain
from kodiai.learning.embeddings import EmbeddingProvider
from kodiai.learning.recency import DEFAULT_RECENCY_CONFIG, OTHER_SEVERITY_FLOOR_SHARE
from kodiai.learning.rerank import DEFAULT_RERANK_CONFIG
from kodiai.learning.second_stage import PrFiles
from kodiai.learning.stages import StagedCut, StageSwitches, run_stages
from kodiai.learning.threshold.baselines import FixedCut, TopKCut, replay_ids
from kodiai.learning.threshold.head_gap import HeadGapCut, LegacyHeadGapCut, LegacyHeadGapParams
from kodiai.learning.threshold.profiles import resolve_cut, resolve_profile
from kodiai.learning.threshold.same_pr import (
    DEFAULT_SAME_PR_MODE,
    SAME_PR_MODES,
    SamePrStrategy,
    needs_normal_cut,
    same_pr_decide,
    scoped_name,
)
from kodiai.learning.threshold.types import NamedCut

FIXED_STEP = 0.05
DEFAULT_KEY = "default"
BEST_FIXED_KEY = "fixed:best"
BEST_FIXED_RECENCY_KEY = "fixed@recency:best"
#: The previous all-MiniLM-L6-v2 default (absolute ceiling 0.829), kept as a reference row.
LEGACY_MINILM_PARAMS = LegacyHeadGapParams(head=3, min_relative_gap=0.12, band=0.08, ceiling=0.829)


def max_distance(*, recency: bool) -> float:
    """The largest distance a candidate can have on the adjusted scale (or the recency-adjusted one)."""
    worst = 2.0 * max(1.0, DEFAULT_RERANK_CONFIG.cross_language_penalty)
    if recency:
        floor = min(DEFAULT_RECENCY_CONFIG.floor_multiplier * OTHER_SEVERITY_FLOOR_SHARE, 1.0)
        worst *= 2 - floor
    return worst


def fixed_grid(upto: float, step: float = FIXED_STEP) -> tuple[float, ...]:
    """``step, 2·step, …`` up to the first multiple of ``step`` at or above ``upto``."""
    count = math.ceil(upto / step - 1e-9)
    return tuple(round(step * i, 4) for i in range(1, count + 1))


class EvalResult(BaseModel):
    """Metrics per strategy name (whole track and per repository); ``default`` names the default."""

    model_config = ConfigDict(frozen=True)

    track: str
    model: str
    options: ChainOptions
    default: str
    strategies: dict[str, StrategyMetrics]
    per_repo: dict[str, dict[str, StrategyMetrics]]
    """repo → strategy → metrics."""
    best_fixed: str | None
    """The ``fixed:T`` (adjusted scale) with the best F0.5 in hindsight."""
    best_fixed_recency: str | None
    """The ``fixed@recency:T`` with the best F0.5 in hindsight."""
    grid: dict[str, list[float]]
    """Per fixed family: [first threshold, last threshold, largest distance seen on that scale]."""
    references: dict[str, str]
    """Strategy name → what it is, for the report."""

    def to_json(self) -> dict[str, Any]:
        """One object keyed by strategy name; ``"default"`` repeats the default strategy's entry and
        ``"fixed:best"`` / ``"fixed@recency:best"`` the best fixed threshold of each scale in hindsight."""
        out: dict[str, Any] = {
            name: {"strategy": name, **m.model_dump()} for name, m in self.strategies.items()
        }
        out[DEFAULT_KEY] = {**out[self.default], "track": self.track, "model": self.model}
        for key, name in (
            (BEST_FIXED_KEY, self.best_fixed),
            (BEST_FIXED_RECENCY_KEY, self.best_fixed_recency),
        ):
            if name is not None:
                out[key] = {**out[name], "threshold": float(name.split(":", 1)[1])}
        out["per_repo"] = {
            repo: {name: m.model_dump() for name, m in by_strategy.items()}
            for repo, by_strategy in self.per_repo.items()
        }
        out["grid"] = self.grid
        return out


def build_strategies(
    model: str,
    *,
    cut_strategy: str | None = None,
    calibration: Mapping[str, Any] | BaseModel | None = None,
    options: ChainOptions | None = None,
    rereview: bool = False,
    stages: StageSwitches | None = None,
) -> tuple[dict[str, NamedCut], str, dict[str, str]]:
    """The strategies compared, the name of the default among them, and a description of each reference.

    ``headgap`` is the model's profile (with the config's calibration keys); with the lexical channel on
    and a profile that uses it, ``headgap:vector`` is the same profile on the vector channel alone and
    ``top<k>+lexical`` the fused order without a cut. ``stages`` (the review's default: both on): the
    model's cut followed by the stages (``headgap+stages``, the shipped model) is added and is the
    default; ``headgap`` stays as the row without them. ``rereview``: the queries are re-reviews, so the
    re-review scope's strategies are added around the default cut and ``same-pr`` is the default
    (``same-pr/headgap``: the same scope around ``headgap`` without the stages, for comparison).
    """
    opts = options or ChainOptions()
    profile = resolve_profile(model, calibration)
    head = profile.cut("headgap")
    strategies: dict[str, NamedCut] = {"maxgap": profile.cut("maxgap"), "headgap": head}
    notes = {
        "maxgap": "the original's cut (recency before the cut; reference)",
        "headgap-v1": "the previous MiniLM default: absolute ceiling 0.829 (reference)",
        f"top{opts.top_k}": f"no cut: the first {opts.top_k} by recency-adjusted distance",
    }
    lexical = opts.lexical and head.uses_lexical
    if lexical:
        vector = profile.model_copy(update={"head_lexical_weight": 0.0}).head_gap_params()
        strategies["headgap:vector"] = HeadGapCut(vector, name="headgap:vector")
        notes["headgap:vector"] = "headgap on the vector channel alone"
    strategies["headgap-v1"] = LegacyHeadGapCut(LEGACY_MINILM_PARAMS)
    strategies[f"top{opts.top_k}"] = TopKCut()
    if lexical:
        fused_top = profile.head_gap_params().model_copy(update={"lexical_band": 1.0, "recency_margin": None})
        strategies[f"top{opts.top_k}+lexical"] = HeadGapCut(fused_top, name=f"top{opts.top_k}+lexical")
        notes[f"top{opts.top_k}+lexical"] = "no cut: the first by fused score (lexical channel on)"
    for t in fixed_grid(max_distance(recency=False)):
        cut = FixedCut(t)
        strategies[cut.name] = cut
    if opts.recency:
        for t in fixed_grid(max_distance(recency=True)):
            cut = FixedCut(t, scale="recency")
            strategies[cut.name] = cut
    default = resolve_cut(model, cut_strategy, calibration).name
    plain = default
    if stages is not None and stages.active and strategies[default].owns_recency:
        staged = StagedCut(strategies[default], stages)
        strategies[staged.name] = staged
        notes[staged.name] = f"{default}, then the stages (shipped model: {staged_switches_note(stages)})"
        default = staged.name
    if rereview:
        inner = strategies[default]
        descriptions = {
            "only": "re-review scope: the PR's own earlier memories only (top k by similarity); none → nothing",
            "first": f"re-review scope: the PR's own earlier memories, then what {default} keeps",
            "fallback": f"re-review scope: the PR's own earlier memories; none → what {default} keeps",
        }
        for mode in SAME_PR_MODES:
            scoped = SamePrStrategy(inner, mode)
            strategies[scoped.name] = scoped
            notes[scoped.name] = descriptions[mode]
        if plain != default:
            bare = SamePrStrategy(strategies[plain], DEFAULT_SAME_PR_MODE, name=f"same-pr/{plain}")
            strategies[bare.name] = bare
            notes[bare.name] = f"{descriptions[DEFAULT_SAME_PR_MODE]} (around {plain}, stages off)"
        default = scoped_name(DEFAULT_SAME_PR_MODE, inner.name)
    return strategies, default, notes


def staged_switches_note(stages: StageSwitches) -> str:
    on = [n for n, v in (("second stage", stages.second_stage), ("abstain", stages.abstain)) if v]
    return " + ".join(on) or "none"


def replay_staged(pool: LabelledPool, first: list[str], switches: StageSwitches, top_k: int) -> list[str]:
    """What the stages keep after the cut kept ``first`` (through the review's own
    :func:`kodiai.learning.stages.run_stages`); a pool captured without the stages' inputs has no replay."""
    pairs = pool.pairs if isinstance(pool, ScopedPool) else None
    if pairs is None:
        raise TypeError("the pool was captured without the stages' inputs")
    out = run_stages(
        pairs,
        PrFiles.of(pool.pr_files) if isinstance(pool, ScopedPool) else PrFiles.of(()),
        switches.resolved(),
        abstain=switches.abstain,
        second_stage=switches.second_stage,
        top_k=top_k,
    )
    if out.kept is None:
        return first
    ids = [c.id for c in pool.pool(True)]
    return [ids[i] for i in out.kept]


def replay_judgements(
    pools: Sequence[LabelledPool], cut: NamedCut, top_k: int, method: str = "replay"
) -> list[QueryJudgement]:
    """``cut`` replayed over captured pools, as judgements."""
    out = []
    for pool in pools:
        lexical = cut.uses_lexical and pool.fused is not None
        kept = _replay(pool, cut, top_k, lexical=lexical)
        out.append(
            QueryJudgement(
                query_id=pool.query_id,
                kept=kept,
                relevant=pool.relevant,
                graded=pool.graded,
                method=method,
                repo=pool.repo,
            )
        )
    return out


def _replay(pool: LabelledPool, cut: NamedCut, top_k: int, *, lexical: bool) -> list[str]:
    """What ``cut`` keeps from the captured ``pool``; a re-review-scoped strategy replays its inner cut on
    the normal pool and :func:`same_pr_decide` on the scope's pool (its inner cut alone without one)."""
    if isinstance(cut, SamePrStrategy):
        own = pool.same_pr if isinstance(pool, ScopedPool) else None
        if own is None:
            return _replay(pool, cut.inner, top_k, lexical=lexical)
        normal = (
            _replay(pool, cut.inner, top_k, lexical=lexical) if needs_normal_cut(cut.mode, len(own)) else []
        )
        return same_pr_decide(own, normal, top_k, cut.mode)[0]
    if isinstance(cut, StagedCut):
        return replay_staged(pool, _replay(pool, cut.inner, top_k, lexical=lexical), cut.switches, top_k)
    return replay_ids(pool.pool(lexical), cut, top_k, lexical=lexical, recency=pool.recency)


def check_replays(
    judgements: Mapping[str, Sequence[QueryJudgement]],
    pools: Sequence[LabelledPool],
    strategies: Mapping[str, NamedCut],
    top_k: int,
) -> None:
    """Raise when a replay keeps anything other than what the chain kept (for any strategy that has one)."""
    for name, cut in strategies.items():
        try:
            replayed = replay_judgements(pools, cut, top_k)
        except TypeError:
            continue
        for chain, replay in zip(judgements[name], replayed, strict=True):
            if chain.kept != replay.kept:
                raise RuntimeError(
                    f"{name}: the replay keeps {replay.kept} for {chain.query_id}, the chain {chain.kept}"
                )


def summarise(
    judgements: Sequence[QueryJudgement], reps: int
) -> tuple[StrategyMetrics, dict[str, StrategyMetrics]]:
    """Whole-set and per-repository metrics with bootstrap intervals."""
    by_repo: dict[str, list[QueryJudgement]] = defaultdict(list)
    for j in judgements:
        by_repo[j.repo].append(j)
    return with_intervals(judgements, reps=reps), {
        repo: with_intervals(js, reps=reps) for repo, js in sorted(by_repo.items())
    }


def _largest(pools: Sequence[LabelledPool], *, weighted: bool) -> float:
    values = [c.weighted if weighted else c.distance for p in pools for c in p.vector]
    return float(np.max(values)) if values else 0.0


def evaluate(
    dataset: EvalDataset,
    provider: EmbeddingProvider,
    cache_dir: str | Path,
    *,
    options: ChainOptions | None = None,
    cut_strategy: str | None = None,
    calibration: Mapping[str, Any] | BaseModel | None = None,
    on_query: Callable[[int, int], None] | None = None,
    on_embedded: Callable[[int, int], None] | None = None,
    bootstrap_reps: int = BOOTSTRAP_REPS,
    stages: StageSwitches | None = None,
) -> tuple[EvalResult, list[LabelledPool]]:
    """Embed (cached), run every strategy through the real chain, check the replays, aggregate.
    ``stages``: the review's stages (see :func:`build_strategies`; None = the cut alone is the default).

    ``on_embedded(done, total)`` reports texts the cache did not hold; ``on_query(done, total)`` queries."""
    opts = options or ChainOptions()
    cache = EmbeddingCache(cache_dir, provider)
    finding_vectors, query_vectors = cache.embed_corpus(
        [f.memory_text() for f in dataset.findings], [q.query_text for q in dataset.queries], on_embedded
    )
    strategies, default, notes = build_strategies(
        provider.model,
        cut_strategy=cut_strategy,
        calibration=calibration,
        options=opts,
        rereview=dataset.scoped,
        stages=stages,
    )
    judgements, pools = run_chain(
        dataset,
        query_vectors,
        finding_vectors,
        strategies,
        model=provider.model,
        options=opts,
        on_query=on_query,
    )
    check_replays(judgements, pools, strategies, opts.top_k)
    metrics: dict[str, StrategyMetrics] = {}
    per_repo: dict[str, dict[str, StrategyMetrics]] = defaultdict(dict)
    for name, js in judgements.items():
        metrics[name], repos = summarise(js, bootstrap_reps)
        for repo, m in repos.items():
            per_repo[repo][name] = m

    def best(prefix: str) -> str | None:
        names = [n for n in metrics if n.startswith(prefix)]
        return max(names, key=lambda n: metrics[n].f0_5) if names else None

    adjusted, recency = fixed_grid(max_distance(recency=False)), fixed_grid(max_distance(recency=True))
    grid = {"fixed": [adjusted[0], adjusted[-1], _largest(pools, weighted=False)]}
    if opts.recency:
        grid["fixed@recency"] = [recency[0], recency[-1], _largest(pools, weighted=True)]
    result = EvalResult(
        track=dataset.name,
        model=provider.model,
        options=opts,
        default=default,
        strategies=metrics,
        per_repo=dict(per_repo),
        best_fixed=best("fixed:"),
        best_fixed_recency=best("fixed@recency:"),
        grid=grid,
        references=notes,
    )
    return result, pools
