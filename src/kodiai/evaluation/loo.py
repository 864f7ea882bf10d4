"""Leave-one-repository-out: calibrate on every repository but one, score the one left out, for each.

This is the evaluation's estimate of unseen data. A fold holds out one repository: every track's queries
of that repository (the re-review track's single repository included) are scored with constants fitted
on the other repositories' queries of all tracks, by the same procedure ``kodiai memory calibrate``
runs. The held-out judgements of all folds are pooled per track (each query is scored exactly once, by
the fold that did not see its repository) and get bootstrap intervals like the dev figures.

Fitted procedures (all replayed on the pools the chain captured, see ``evaluate.check_replays``):

- ``headgap``: :func:`kodiai.learning.calibration.derive_profile` (band and recency margin; lexical weight
  from the profile), and ``headgap:vector`` the same without the lexical channel;
- ``fixed`` / ``fixed@recency``: the threshold of the grid with the best training objective;
- ``headgap-v1``: the previous procedure — the absolute ceiling re-fitted (50…100 % quantiles of the
  training queries' best distances, or off) under its old constraints (empty ≤ 10 %, re-review abstain
  ≥ 70 %), the relative constants kept.

- ``headgap+stages`` (the review's default): the ``headgap`` fitted above, then both stages' models
  (:mod:`kodiai.evaluation.stages`: abstain model and ranker) trained on the training
  repositories' first-review queries — never the shipped model, which saw every repository;
- the re-review scope around the default cut (``same-pr-then-headgap``, ``same-pr-else-headgap``): the inner
  ``headgap`` fitted as above, the scope itself has nothing to fit.

Strategies without fitted constants (``maxgap``, ``top<k>``, ``top<k>+lexical``, ``same-pr``) score as on
the dev split. The re-review-scoped rows are reported only on the tracks whose queries are re-reviews.

Besides the held-out figures, each fold's fitted constants are also scored on the whole track
(``stability``): how much the fitted profile's F0.5 moves when one repository is left out of the fit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from kodiai.evaluation.calibration import CalibrationTargets, LabelledPool, derive_profile
from kodiai.evaluation.defaults import BOOTSTRAP_REPS
from kodiai.evaluation.evaluate import (
    LEGACY_MINILM_PARAMS,
    build_strategies,
    fixed_grid,
    max_distance,
    replay_judgements,
)
from kodiai.evaluation.metrics import (
    QueryJudgement,
    StrategyMetrics,
    aggregate,
    with_intervals,
)
from kodiai.evaluation.runner import ChainOptions, ScopedPool
from kodiai.evaluation.stages import FirstFit, StageQuery, train_abstain, train_ranker
from kodiai.learning.second_stage import PrFiles
from kodiai.learning.stages import StagedCut, StagesModel, StageSwitches, staged_name
from kodiai.learning.threshold.baselines import FixedCut
from kodiai.learning.threshold.head_gap import HeadGapCut, LegacyHeadGapCut
from kodiai.learning.threshold.profiles import CalibrationProfile, resolve_profile
from kodiai.learning.threshold.same_pr import SamePrMode, SamePrStrategy, scoped_name
from kodiai.learning.threshold.types import NamedCut

Tracks = Mapping[str, Sequence[LabelledPool]]
LEGACY_TARGETS = CalibrationTargets(max_empty=0.10, min_abstain=0.70, abstain_tracks=frozenset({"rereview"}))


class FoldReport(BaseModel):
    """One fold: the repository held out and, per fitted strategy, its constants and their figures."""

    model_config = ConfigDict(frozen=True)

    repo: str
    params: dict[str, str]
    """strategy → the constants fitted without ``repo``."""
    stability: dict[str, dict[str, float]]
    """strategy → track → F0.5 of this fold's constants on the whole track."""


class LooResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    strategies: dict[str, dict[str, StrategyMetrics]]
    """track → strategy → the pooled held-out figures (bootstrap intervals)."""
    per_repo: dict[str, dict[str, dict[str, StrategyMetrics]]]
    """track → repo → strategy → the figures of the fold that held the repo out."""
    folds: list[FoldReport]
    fitted: list[str]
    """The strategies whose constants were fitted per fold (the others score as on the dev split)."""
    defaults: dict[str, str] = {}
    """track → the default the review runs on that track (``same-pr`` on the re-review track)."""

    def stability_range(self, strategy: str, track: str) -> tuple[float, float] | None:
        values = [f.stability[strategy][track] for f in self.folds if track in f.stability.get(strategy, {})]
        return (min(values), max(values)) if values else None

    def heldout_range(self, strategy: str, track: str) -> tuple[float, float] | None:
        repos = self.per_repo.get(track, {})
        values = [m[strategy].f0_5 for m in repos.values() if strategy in m and m[strategy].with_relevant]
        return (min(values), max(values)) if values else None


def _objective(figures: Mapping[str, StrategyMetrics], goal: CalibrationTargets) -> tuple[float, float]:
    """(−violation, mean F0.5 over the tracks): the same objective as ``derive_profile``."""
    violation = 0.0
    for track, m in figures.items():
        violation += max(0.0, (m.empty or 0.0) - goal.max_empty)
        if goal.min_abstain > 0 and m.abstain is not None and track in goal.abstain_tracks:
            violation += max(0.0, goal.min_abstain - m.abstain)
    return (-round(violation, 9), round(sum(m.f0_5 for m in figures.values()) / len(figures), 9))


def choose(cuts: Sequence[NamedCut], train: Tracks, top_k: int, goal: CalibrationTargets) -> NamedCut:
    """The cut with the best training objective (the first on a tie)."""
    best: tuple[tuple[float, float], NamedCut] | None = None
    for cut in cuts:
        figures = {
            track: aggregate(replay_judgements(pools, cut, top_k)) for track, pools in train.items() if pools
        }
        key = _objective(figures, goal)
        if best is None or key > best[0]:
            best = (key, cut)
    assert best is not None
    return best[1]


def _legacy_cuts(train: Tracks) -> list[NamedCut]:
    best = [p.vector[0].distance for pools in train.values() for p in pools if p.vector]
    ceilings: list[float | None] = [None]
    if best:
        ceilings += sorted({round(float(q), 3) for q in np.quantile(best, np.linspace(0.5, 1.0, 21))})
    return [LegacyHeadGapCut(LEGACY_MINILM_PARAMS.model_copy(update={"ceiling": c})) for c in ceilings]


def _describe(cut: NamedCut) -> str:
    if isinstance(cut, StagedCut):
        model = cut.switches.resolved()
        return (
            f"{_describe(cut.inner)}; ranker p ≥ {model.ranker.threshold:g}, "
            f"abstain p < {model.abstain.threshold:g}"
        )
    if isinstance(cut, SamePrStrategy):
        return f"scope {cut.mode}, inner {_describe(cut.inner)}"
    if isinstance(cut, FixedCut):
        return f"{cut.threshold:g}"
    if isinstance(cut, LegacyHeadGapCut):
        return f"ceiling {cut.params.ceiling}"
    if isinstance(cut, HeadGapCut):
        p = cut.params
        band = (
            f"lexical band {p.lexical_band:g} (weight {p.lexical_weight:g})"
            if cut.uses_lexical
            else f"band {p.band:g}"
        )
        gate = f", prominence {p.min_prominence:g}" if p.min_prominence else ""
        return f"{band}, recency margin {p.recency_margin}{gate}"
    return cut.name


def fitted_procedures(
    *,
    model: str,
    profile: CalibrationProfile,
    top_k: int,
    lexical: bool,
    recency: bool,
    targets: CalibrationTargets,
    rereview: bool = False,
    stages: StageSwitches | None = None,
) -> dict[str, Callable[[Tracks], NamedCut]]:
    """Strategy name → the procedure that fits its constants on training tracks. ``rereview``: add the
    re-review scope around the fitted ``headgap`` (modes ``first`` and ``fallback``; ``only`` has nothing
    to fit). ``stages`` (active): add the fitted ``headgap`` followed by the stages trained per fold."""

    def headgap(use_lexical: bool) -> Callable[[Tracks], NamedCut]:
        base = profile if use_lexical else profile.model_copy(update={"head_lexical_weight": 0.0})
        name = "headgap" if use_lexical or not lexical else "headgap:vector"

        def fit(train: Tracks) -> NamedCut:
            result = derive_profile(
                train, model=model, top_k=top_k, targets=targets, lexical=use_lexical, base=base
            )
            return HeadGapCut(result.profile.head_gap_params(), name=name)

        return fit

    procedures: dict[str, Callable[[Tracks], NamedCut]] = {"headgap": headgap(lexical)}
    if lexical and profile.head_lexical_weight > 0:
        procedures["headgap:vector"] = headgap(False)
    adjusted = [FixedCut(t) for t in fixed_grid(max_distance(recency=False))]
    procedures["fixed"] = lambda train: choose(adjusted, train, top_k, targets)
    if recency:
        weighted = [FixedCut(t, scale="recency") for t in fixed_grid(max_distance(recency=True))]
        procedures["fixed@recency"] = lambda train: choose(weighted, train, top_k, targets)
    procedures["headgap-v1"] = lambda train: choose(_legacy_cuts(train), train, top_k, LEGACY_TARGETS)
    fit_head = _last_fit(procedures["headgap"])
    procedures["headgap"] = fit_head
    if stages is not None and stages.active:
        procedures[staged_name("headgap", stages)] = staged_fit(fit_head, stages)
    if rereview:
        for mode in ("first", "fallback"):
            procedures[scoped_name(mode, "headgap")] = _scoped_fit(fit_head, mode)
    return procedures


def stage_training(train: Tracks) -> list[StageQuery]:
    """The stages' training queries: the first-review tracks' pools (a re-review runs the re-review
    scope, not the stages), with the inputs the chain captured."""
    return [
        StageQuery(p, p.pairs, PrFiles.of(p.pr_files))
        for pools in train.values()
        if not _is_scoped(pools)
        for p in pools
        if isinstance(p, ScopedPool) and p.pairs is not None
    ]


def staged_fit(fit: Callable[[Tracks], NamedCut], stages: StageSwitches) -> Callable[[Tracks], NamedCut]:
    """The cut ``fit`` fits, then the stages with both models trained on the same training repositories."""

    def fitted(train: Tracks) -> NamedCut:
        queries = stage_training(train)
        if not queries:
            raise ValueError("the stages need first-review pools captured with their inputs")
        model = StagesModel(ranker=train_ranker(queries), abstain=train_abstain(queries), trained_on="fold")
        return StagedCut(fit(train), stages.model_copy(update={"model": model}))

    return fitted


def _scoped_fit(fit: Callable[[Tracks], NamedCut], mode: SamePrMode) -> Callable[[Tracks], NamedCut]:
    """The re-review scope in ``mode`` around the cut ``fit`` fits (the scope itself has no constants)."""
    return lambda train: SamePrStrategy(fit(train), mode)


def _last_fit(fit: Callable[[Tracks], NamedCut]) -> Callable[[Tracks], NamedCut]:
    """``fit`` remembering its last answer: a fold fits ``headgap`` once for every strategy around it."""
    last: list[tuple[Tracks, NamedCut]] = []

    def cached(train: Tracks) -> NamedCut:
        if not last or last[0][0] is not train:
            last[:] = [(train, fit(train))]
        return last[0][1]

    return cached


def leave_one_repo_out(
    tracks: Tracks,
    procedures: Mapping[str, Callable[[Tracks], NamedCut]],
    unfitted: Mapping[str, NamedCut],
    *,
    top_k: int,
    bootstrap_reps: int = BOOTSTRAP_REPS,
    scoped: frozenset[str] = frozenset(),
    defaults: Mapping[str, str] | None = None,
) -> LooResult:
    """Run every fold. ``unfitted``: strategies without fitted constants, replayed as they are (so
    their held-out figures equal their dev figures; ``maxgap`` has no replay and is left out).
    ``scoped``: the re-review-scoped strategies, reported only on tracks whose pools carry the scope."""
    repos = sorted({p.repo for pools in tracks.values() for p in pools})
    if len(repos) < 2:
        raise ValueError("leave-one-repository-out needs queries from at least two repositories")
    heldout: dict[str, dict[str, list[QueryJudgement]]] = defaultdict(lambda: defaultdict(list))
    folds: list[FoldReport] = []
    for repo in repos:
        train = {t: [p for p in pools if p.repo != repo] for t, pools in tracks.items()}
        train = {t: pools for t, pools in train.items() if pools}
        params: dict[str, str] = {}
        stability: dict[str, dict[str, float]] = {}
        for name, fit in procedures.items():
            cut = fit(train)
            params[name] = _describe(cut)
            stability[name] = {}
            for track, pools in tracks.items():
                test = [p for p in pools if p.repo == repo]
                if test:
                    heldout[track][name].extend(replay_judgements(test, cut, top_k))
                stability[name][track] = aggregate(replay_judgements(pools, cut, top_k)).f0_5
        folds.append(FoldReport(repo=repo, params=params, stability=stability))
    strategies: dict[str, dict[str, StrategyMetrics]] = {}
    per_repo: dict[str, dict[str, dict[str, StrategyMetrics]]] = {}
    for track in tracks:
        judged: dict[str, Sequence[QueryJudgement]] = {
            **{name: replay_judgements(tracks[track], cut, top_k) for name, cut in unfitted.items()},
            **{name: heldout[track][name] for name in procedures},
        }
        if not _is_scoped(tracks[track]):
            judged = {name: js for name, js in judged.items() if name not in scoped}
        strategies[track] = {name: with_intervals(js, reps=bootstrap_reps) for name, js in judged.items()}
        by_repo: dict[str, dict[str, StrategyMetrics]] = defaultdict(dict)
        for name, js in judged.items():
            grouped: dict[str, list[QueryJudgement]] = defaultdict(list)
            for j in js:
                grouped[j.repo].append(j)
            for r, group in grouped.items():
                by_repo[r][name] = with_intervals(group, reps=bootstrap_reps)
        per_repo[track] = dict(sorted(by_repo.items()))
    return LooResult(
        strategies=strategies,
        per_repo=per_repo,
        folds=folds,
        fitted=list(procedures),
        defaults=dict(defaults or {}),
    )


def _is_scoped(pools: Sequence[LabelledPool]) -> bool:
    """Whether a track's queries are re-reviews (their pools carry the re-review scope)."""
    return any(isinstance(p, ScopedPool) and p.same_pr is not None for p in pools)


def evaluation_loo(
    pools: Tracks,
    *,
    model: str,
    options: ChainOptions,
    calibration: Mapping[str, object] | BaseModel | None = None,
    min_abstain: float = 0.0,
    bootstrap_reps: int = BOOTSTRAP_REPS,
    stages: StageSwitches | None = None,
) -> LooResult:
    """Leave-one-repository-out over the pools ``evaluate`` captured for each track, with the model's
    profile (and the config's calibration keys), the fitted procedures above, and the no-cut rows.
    ``stages``: the review's stages (the default row becomes ``headgap+stages``, trained per fold)."""
    profile = resolve_profile(model, calibration)
    rereview = any(_is_scoped(track) for track in pools.values())
    procedures = fitted_procedures(
        model=model,
        profile=profile,
        top_k=options.top_k,
        lexical=options.lexical,
        recency=options.recency,
        targets=CalibrationTargets(min_abstain=min_abstain),
        rereview=rereview,
        stages=stages,
    )
    strategies, default, _ = build_strategies(model, calibration=calibration, options=options, stages=stages)
    # "top k, no cut" (and its fused variant) have nothing to fit; maxgap has no replay.
    unfitted = {name: cut for name, cut in strategies.items() if name.startswith("top")}
    scoped: set[str] = set()
    defaults = {track: default for track in pools}
    if rereview:
        scoped_strategies, scoped_default, _ = build_strategies(
            model, calibration=calibration, options=options, rereview=True, stages=stages
        )
        scoped = {n for n, c in scoped_strategies.items() if isinstance(c, SamePrStrategy)}
        # the scope in mode "only" has nothing to fit (its inner cut never answers on a re-review)
        unfitted[scoped_default] = scoped_strategies[scoped_default]
        for name in scoped_strategies:
            if name.startswith("same-pr/"):
                unfitted[name] = scoped_strategies[name]
        defaults.update({track: scoped_default for track, p in pools.items() if _is_scoped(p)})
    return leave_one_repo_out(
        pools,
        procedures,
        unfitted,
        top_k=options.top_k,
        bootstrap_reps=bootstrap_reps,
        scoped=frozenset(scoped | {n for n in procedures if n.startswith("same-pr")}),
        defaults=defaults,
    )


def first_stage_fit(model: str, calibration: Mapping[str, object] | BaseModel | None = None) -> FirstFit:
    """The ``--loo`` procedure for ``headgap`` (its band fitted on the training pools)."""
    return fitted_procedures(
        model=model,
        profile=resolve_profile(model, calibration),
        top_k=5,
        lexical=True,
        recency=True,
        targets=CalibrationTargets(),
    )["headgap"]
