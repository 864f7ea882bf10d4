"""Abstention and the second stage, trained and scored leave-one-repository-out (pure; no I/O).

Input: the past-fixes track's captured pools (the fused pool, as ``headgap`` sees it) with each query's
changed files and languages. Per fold (one repository held out), on the other repositories' queries:

1. the first stage: ``headgap`` with its band fitted (the same procedure as ``--loo``);
2. the abstain model (:mod:`kodiai.learning.abstain`): a logistic regression over the pool signals,
   label "the query has a relevant memory", threshold = the highest abstain rate on the training
   negatives whose training empty rate stays ≤ ``max_empty``;
3. the ranker (:mod:`kodiai.learning.second_stage`): a logistic regression over the pair features, label
   "this candidate is relevant", threshold = the best training F0.5 with training empty ≤ ``max_empty``.

The held-out repository is then scored with the fold's models; every query is scored once. Variants
``:no-files`` train the same models with the file evidence removed (no same-file/directory/stem/path
signal): on this data the label *is* file co-location (a finding is relevant when its file is one the
PR changes), so the file features reproduce the label and the ``:no-files`` rows are the control that
shows what the other signals carry.

The re-review track is not scored here: a re-review runs the re-review scope (``same-pr``), which
decides without the cut, so neither stage runs there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict

from kodiai.evaluation.calibration import LabelledPool
from kodiai.evaluation.data import EvalDataset
from kodiai.evaluation.metrics import (
    QueryJudgement,
    StrategyMetrics,
    aggregate,
    query_scores,
    with_intervals,
)
from kodiai.learning.abstain import SIGNALS, AbstainModel, pool_signals
from kodiai.learning.logistic import fit_logistic
from kodiai.learning.second_stage import (
    FEATURES,
    PairInput,
    PrFiles,
    RankerModel,
    language_match,
    pair_features,
    rank_pool,
)
from kodiai.learning.stages import StagesModel, StageSwitches, run_stages
from kodiai.learning.threshold.baselines import replay_ids
from kodiai.learning.threshold.types import NamedCut

FirstFit = Callable[[Mapping[str, Sequence[LabelledPool]]], NamedCut]
if TYPE_CHECKING:
    from kodiai.learning.embeddings import EmbeddingProvider

MAX_EMPTY = 0.10
FILE_FEATURES = frozenset({"same_file", "same_dir", "path_overlap", "same_stem"})
FILE_SIGNALS = frozenset({"file_evidence"})
RANKER_GRID = tuple(round(0.02 * i, 2) for i in range(1, 46))
ABSTAIN_GRID = tuple(round(0.01 * i, 2) for i in range(1, 100))
VARIANTS = ("abstain", "abstain:no-files", "rank", "rank:no-files", "rank>abstain", "rank>abstain:no-files")


@dataclass(frozen=True)
class StageQuery:
    """One labelled query as the stages see it."""

    pool: LabelledPool
    pairs: list[PairInput]
    pr: PrFiles

    @property
    def relevant(self) -> frozenset[str]:
        return self.pool.relevant

    @property
    def repo(self) -> str:
        return self.pool.repo


def stage_queries(
    pools: Sequence[LabelledPool],
    file_path: Mapping[str, str],
    pr_files: Mapping[str, Sequence[str]],
    languages: Mapping[str, Sequence[str]],
) -> list[StageQuery]:
    """Pair inputs for each pool (``file_path``: finding id → its file; ``pr_files`` / ``languages``:
    query id → the PR's changed files (as its retrieval query lists them) / languages)."""
    out = []
    for p in pools:
        langs = languages.get(p.query_id, ())
        pairs = [
            PairInput(
                c.distance, c.multiplier, c.lexical, file_path[c.id], language_match(file_path[c.id], langs)
            )
            for c in p.pool(True)
        ]
        out.append(StageQuery(p, pairs, PrFiles.of(pr_files.get(p.query_id, ()))))
    return out


def _mask(names: Sequence[str], drop: frozenset[str]) -> np.ndarray:
    return np.array([0.0 if n in drop else 1.0 for n in names])


def train_ranker(queries: Sequence[StageQuery], *, files: bool = True, l2: float = 1.0) -> RankerModel:
    """The ranker fitted on ``queries`` (threshold: best F0.5 with empty ≤ :data:`MAX_EMPTY`); without
    ``files`` the file features are zeroed (constant columns get weight 0)."""
    mask = _mask(FEATURES, frozenset() if files else FILE_FEATURES)
    xs = [pair_features(q.pairs, q.pr) * mask for q in queries]
    ys = [np.array([c.id in q.relevant for c in q.pool.pool(True)], dtype=np.float64) for q in queries]
    mean, scale, weights, bias = fit_logistic(np.vstack(xs), np.concatenate(ys), l2=l2)
    model = RankerModel(mean=mean, scale=scale, weights=weights, bias=bias, threshold=0.5)
    probs = [model.probabilities(x) for x in xs]
    best: tuple[tuple[float, float], float] | None = None
    for thr in RANKER_GRID:
        f, e = [], []
        for q, p in zip(queries, probs, strict=True):
            if not q.relevant:
                continue
            order = sorted(range(len(p)), key=lambda i: (-p[i], i))
            kept = [q.pool.pool(True)[i].id for i in order if p[i] >= thr][:5]
            f.append(query_scores(kept, q.relevant)[2])
            e.append(0.0 if kept else 1.0)
        key = (-max(0.0, float(np.mean(e)) - MAX_EMPTY), float(np.mean(f)))
        if best is None or key > best[0]:
            best = (key, thr)
    assert best is not None
    return model.model_copy(update={"threshold": best[1]})


def train_abstain(queries: Sequence[StageQuery], *, files: bool = True, l2: float = 1.0) -> AbstainModel:
    """The abstain model fitted on ``queries`` (threshold: the most abstention on the negatives with empty
    ≤ :data:`MAX_EMPTY` on the positives; ties keep the lower empty rate, then the lower threshold)."""
    mask = _mask(SIGNALS, frozenset() if files else FILE_SIGNALS)
    x = np.array([pool_signals(q.pairs, q.pr) for q in queries]) * mask
    y = np.array([1.0 if q.relevant else 0.0 for q in queries])
    mean, scale, weights, bias = fit_logistic(x, y, l2=l2)
    model = AbstainModel(mean=mean, scale=scale, weights=weights, bias=bias, threshold=0.0)
    p = np.array([model.probability(row) for row in x])
    best: tuple[tuple[float, float, float], float] | None = None
    for thr in ABSTAIN_GRID:
        fired = p < thr
        empty = float(fired[y == 1].mean()) if (y == 1).any() else 0.0
        rate = float(fired[y == 0].mean()) if (y == 0).any() else 0.0
        key = (-max(0.0, empty - MAX_EMPTY), rate, -empty)
        if best is None or key > best[0]:
            best = (key, thr)
    assert best is not None
    return model.model_copy(update={"threshold": best[1]})


@dataclass(frozen=True)
class Models:
    """One fold's fitted stages."""

    first: NamedCut
    abstain: AbstainModel
    abstain_nofiles: AbstainModel
    ranker: RankerModel
    ranker_nofiles: RankerModel


def _first(q: StageQuery, cut: NamedCut) -> list[str]:
    return replay_ids(q.pool.pool(True), cut, 5, lexical=q.pool.fused is not None, recency=q.pool.recency)


def _ranked(q: StageQuery, model: RankerModel, *, force: bool = False) -> tuple[list[str], str]:
    """The ranker's answer and status (``used`` / ``skipped:<rule>``); ``force`` runs it past a skip rule."""
    ids = [c.id for c in q.pool.pool(True)]
    decision = rank_pool(q.pairs, q.pr, model, 5)
    if decision.status == "used":
        return [ids[i] for i in decision.kept], decision.status
    if not force or not q.pairs:
        return [], decision.status
    p = model.probabilities(pair_features(q.pairs, q.pr))
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))
    return [ids[i] for i in order if p[i] >= model.threshold - 1e-12][:5], decision.status


def answer(q: StageQuery, variant: str, m: Models) -> tuple[list[str], str]:
    """What ``variant`` keeps for ``q`` and the method it reports, through the review's own
    :func:`kodiai.learning.stages.run_stages` after the fold's first stage. Variants: ``abstain`` (the
    abstain stage alone), ``rank`` (the ranker alone; a skipped pool keeps the cut's answer),
    ``rank>abstain`` (both switches on: the ranker, and the abstain stage where it is off or skipped);
    ``:no-files`` uses the models trained without the file evidence."""
    first = _first(q, m.first)
    if variant == "headgap":
        return first, "headgap"
    files = not variant.endswith(":no-files")
    base = variant.removesuffix(":no-files")
    model = StagesModel(
        ranker=m.ranker if files else m.ranker_nofiles, abstain=m.abstain if files else m.abstain_nofiles
    )
    out = run_stages(
        q.pairs, q.pr, model, abstain="abstain" in base, second_stage=base.startswith("rank"), top_k=5
    )
    if out.kept is None or out.method is None:
        return first, out.second_stage or "headgap"
    ids = [c.id for c in q.pool.pool(True)]
    return [ids[i] for i in out.kept], out.method


class SkipFigures(BaseModel):
    """The ranker's skip rules, measured held out."""

    model_config = ConfigDict(frozen=True)

    queries: int
    skip_rate: float
    by_rule: dict[str, float]
    used_f0_5_first: float | None
    used_f0_5_ranked: float | None
    """F0.5 over the positives where the ranker ran: the first stage's, the ranker's (the lift)."""
    skipped_f0_5_first: float | None
    skipped_f0_5_forced: float | None
    """Over the positives a rule skipped: the first stage's F0.5 and the ranker's had it run (the cost)."""
    skipped_abstain_first: float | None
    skipped_abstain_forced: float | None
    """Over the negatives a rule skipped: the abstain rate of the first stage and of the forced ranker."""


class StagesResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    strategies: dict[str, StrategyMetrics]
    """variant → the pooled held-out figures (``headgap`` = the first stage alone, band fitted per fold)."""
    per_repo: dict[str, dict[str, float]]
    """repo → variant → held-out F0.5."""
    stability: dict[str, tuple[float, float]]
    """variant → (min, max) of each fold's models' F0.5 on the whole track."""
    skips: SkipFigures
    folds: list[dict[str, str]]
    dev: dict[str, StrategyMetrics] = {}
    """variant → the figures of the models fitted on every query, scored on the same queries (in
    sample: what the shipped model does on the data it was trained on)."""


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def evaluate_stages(
    queries: Sequence[StageQuery],
    fit_first: FirstFit,
    *,
    track: str = "past-fixes",
    bootstrap_reps: int = 1000,
    variants: Sequence[str] = ("headgap", *VARIANTS),
) -> StagesResult:
    """Leave-one-repository-out over ``queries`` (one track); ``fit_first`` fits the first stage's cut on
    training pools (``{track: pools}``), as ``--loo`` does."""
    repos = sorted({q.repo for q in queries})
    held: dict[str, list[QueryJudgement]] = defaultdict(list)
    stability: dict[str, list[float]] = defaultdict(list)
    folds: list[dict[str, str]] = []
    skip_rows: list[_SkipRow] = []
    for repo in repos:
        train = [q for q in queries if q.repo != repo]
        models = fit_models(train, fit_first, track)
        folds.append(
            {
                "repo": repo,
                "abstain threshold": f"{models.abstain.threshold:g}",
                "abstain:no-files threshold": f"{models.abstain_nofiles.threshold:g}",
                "rank threshold": f"{models.ranker.threshold:g}",
                "rank:no-files threshold": f"{models.ranker_nofiles.threshold:g}",
            }
        )
        for variant in variants:
            judged = [_judge(q, *answer(q, variant, models)) for q in queries]
            stability[variant].append(aggregate(judged).f0_5)
            held[variant].extend(j for q, j in zip(queries, judged, strict=True) if q.repo == repo)
        for q in (q for q in queries if q.repo == repo):
            first = _first(q, models.first)
            forced, status = _ranked(q, models.ranker, force=True)
            skip_rows.append(_SkipRow(q, status, first, forced))
    everything = fit_models(queries, fit_first, track)
    dev = {v: aggregate([_judge(q, *answer(q, v, everything)) for q in queries]) for v in variants}
    per_repo: dict[str, dict[str, float]] = defaultdict(dict)
    for variant, js in held.items():
        by: dict[str, list[QueryJudgement]] = defaultdict(list)
        for j in js:
            by[j.repo].append(j)
        for r, group in sorted(by.items()):
            per_repo[r][variant] = aggregate(group).f0_5
    return StagesResult(
        strategies={v: with_intervals(js, reps=bootstrap_reps) for v, js in held.items()},
        per_repo=dict(per_repo),
        stability={v: (min(s), max(s)) for v, s in stability.items()},
        skips=_skip_figures(skip_rows),
        folds=folds,
        dev=dev,
    )


def fit_models(train: Sequence[StageQuery], fit_first: FirstFit, track: str = "past-fixes") -> Models:
    """Every stage fitted on ``train``: the first stage's band, both abstain models, both rankers."""
    return Models(
        first=fit_first({track: [q.pool for q in train]}),
        abstain=train_abstain(train),
        abstain_nofiles=train_abstain(train, files=False),
        ranker=train_ranker(train),
        ranker_nofiles=train_ranker(train, files=False),
    )


def _judge(q: StageQuery, kept: list[str], method: str) -> QueryJudgement:
    return QueryJudgement(
        query_id=q.pool.query_id,
        kept=kept,
        relevant=q.relevant,
        graded=q.pool.graded,
        method=method,
        repo=q.repo,
    )


@dataclass(frozen=True)
class _SkipRow:
    query: StageQuery
    status: str
    first: list[str]
    forced: list[str]


def _skip_figures(rows: Sequence[_SkipRow]) -> SkipFigures:
    used = [r for r in rows if r.status == "used"]
    skipped = [r for r in rows if r.status.startswith("skipped:")]
    rules: dict[str, int] = defaultdict(int)
    for r in skipped:
        rules[r.status.removeprefix("skipped:")] += 1

    def f(rs: Sequence[_SkipRow], forced: bool) -> float | None:
        return _mean(
            [
                query_scores(r.forced if forced else r.first, r.query.relevant)[2]
                for r in rs
                if r.query.relevant
            ]
        )

    def a(rs: Sequence[_SkipRow], forced: bool) -> float | None:
        return _mean([0.0 if (r.forced if forced else r.first) else 1.0 for r in rs if not r.query.relevant])

    return SkipFigures(
        queries=len(rows),
        skip_rate=len(skipped) / len(rows) if rows else 0.0,
        by_rule={k: v / len(rows) for k, v in sorted(rules.items())},
        used_f0_5_first=f(used, False),
        used_f0_5_ranked=f(used, True),
        skipped_f0_5_first=f(skipped, False),
        skipped_f0_5_forced=f(skipped, True),
        skipped_abstain_first=a(skipped, False),
        skipped_abstain_forced=a(skipped, True),
    )


def dataset_queries(dataset: EvalDataset, pools: Sequence[LabelledPool]) -> list[StageQuery]:
    """:func:`stage_queries` with the files and languages the data set carries."""
    return stage_queries(
        pools,
        {f.id: f.file_path for f in dataset.findings},
        {q.id: q.file_paths for q in dataset.queries},
        {q.id: q.languages for q in dataset.queries},
    )


def train_shipped(queries: Sequence[StageQuery], source: str) -> StagesModel:
    """The model the package ships: both stages trained on every query (the folds above say how it
    carries to repositories it was not trained on)."""
    n_pairs = sum(len(q.pairs) for q in queries)
    note = f"{source}: {len(queries)} queries, {n_pairs} pairs; kodiai eval stages --write-model"
    return StagesModel(
        ranker=train_ranker(queries).model_copy(update={"trained_on": note}),
        abstain=train_abstain(queries).model_copy(update={"trained_on": note}),
        trained_on=note,
    )


def stages_json(result: StagesResult) -> dict[str, object]:
    """The result as JSON (metrics per variant, per repository, stability, skip figures, folds, and the
    targets of every variant)."""
    out = result.model_dump()
    out["targets"] = {
        v: [{"target": t, "value": value, "met": met} for t, value, met in stage_targets(result, v)]
        for v in result.strategies
    }
    return out


def export_queries(queries: Sequence[StageQuery], track: str) -> list[dict[str, object]]:
    """The stage inputs as plain rows (a test fixture of real pools: ids, distances, multipliers, BM25,
    files, language matches, the PR's files and the relevant ids — no texts)."""
    return [
        {
            "track": track,
            "query": q.pool.query_id,
            "repo": q.repo,
            "relevant": sorted(q.relevant),
            "pr_files": sorted(q.pr.files),
            "pool": [
                [
                    c.id,
                    round(c.distance, 6),
                    round(c.multiplier, 6),
                    round(c.lexical, 6),
                    p.file_path,
                    p.language_match,
                ]
                for c, p in zip(q.pool.pool(True), q.pairs, strict=True)
            ],
        }
        for q in queries
    ]


def import_queries(rows: Sequence[Mapping[str, object]]) -> list[StageQuery]:
    """:func:`export_queries` back into stage queries (the fused pool; recency on)."""
    from kodiai.learning.threshold.types import Candidate

    out = []
    for row in rows:
        pool_rows: list[list[object]] = row["pool"]  # type: ignore[assignment]
        candidates = [Candidate(str(r[0]), float(r[1]), float(r[2]), float(r[3])) for r in pool_rows]  # type: ignore[arg-type]
        pairs = [
            PairInput(c.distance, c.multiplier, c.lexical, str(r[4]), r[5])  # type: ignore[arg-type]
            for c, r in zip(candidates, pool_rows, strict=True)
        ]
        relevant = frozenset(str(i) for i in row["relevant"])  # type: ignore[attr-defined]
        pool = LabelledPool(
            query_id=str(row["query"]),
            repo=str(row["repo"]),
            relevant=relevant,
            graded=dict.fromkeys(relevant, 2),
            vector=candidates,
            fused=candidates,
        )
        out.append(StageQuery(pool, pairs, PrFiles.of([str(f) for f in row["pr_files"]])))  # type: ignore[attr-defined]
    return out


#: The issue's targets for the stages, held out: F0.5 overall and in every repository, abstain on the
#: queries without a relevant memory, empty on those with one, and the fold spread.
STAGE_GOALS = {"f0_5": 0.65, "repo_f0_5": 0.45, "abstain": 0.50, "empty": 0.10, "spread": 0.03}


def stage_targets(result: StagesResult, variant: str) -> list[tuple[str, str, bool]]:
    """``(target, value, met)`` for ``variant``'s held-out figures."""
    m = result.strategies[variant]
    lo, hi = result.stability[variant]
    weakest = min(by[variant] for by in result.per_repo.values() if variant in by)
    g = STAGE_GOALS
    abstain = m.abstain if m.abstain is not None else 0.0
    empty = m.empty if m.empty is not None else 0.0
    return [
        (f"F0.5 ≥ {g['f0_5']}", f"{m.f0_5:.3f}", m.f0_5 >= g["f0_5"]),
        (f"every repository F0.5 ≥ {g['repo_f0_5']}", f"{weakest:.3f}", weakest >= g["repo_f0_5"]),
        (f"abstain ≥ {g['abstain']:.0%}", f"{abstain:.0%}", abstain >= g["abstain"]),
        (f"empty ≤ {g['empty']:.0%}", f"{empty:.0%}", empty <= g["empty"]),
        (f"fold spread ≤ {g['spread']}", f"{hi - lo:.3f}", hi - lo <= g["spread"]),
    ]


def check_chain(
    dataset: EvalDataset,
    provider: EmbeddingProvider,
    cache_dir: str | Path,
    queries: Sequence[StageQuery],
    fit_first: FirstFit,
) -> int:
    """Run the real chain (store, channels, ``retrieve_context`` with both stages on, as the review runs
    them) with the models fitted on every query, and raise when it keeps anything other than the replay
    this module scores; returns the number of queries checked. The figures above are replays on captured
    pools: this is what ties them to the review's code path."""
    from kodiai.evaluation.embedding_cache import EmbeddingCache
    from kodiai.evaluation.runner import ChainOptions, run_chain

    models = fit_models(queries, fit_first)
    switches = StageSwitches(
        abstain=True, second_stage=True, model=StagesModel(ranker=models.ranker, abstain=models.abstain)
    )
    findings, vectors = EmbeddingCache(cache_dir, provider).embed_corpus(
        [f.memory_text() for f in dataset.findings], [q.query_text for q in dataset.queries]
    )
    judged, _ = run_chain(
        dataset,
        vectors,
        findings,
        {"rank>abstain": models.first},
        model=provider.model,
        options=ChainOptions(),
        stages=switches,
    )
    replay = {q.pool.query_id: answer(q, "rank>abstain", models)[0] for q in queries}
    for j in judged["rank>abstain"]:
        if j.kept != replay[j.query_id]:
            raise RuntimeError(
                f"stages: the chain keeps {j.kept} for {j.query_id}, the replay {replay[j.query_id]}"
            )
    return len(judged["rank>abstain"])
