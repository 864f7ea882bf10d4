"""The issue's retrieval-quality targets, checked on dev and leave-one-repository-out figures.

Past fixes (``past-fixes``): F0.5 ≥ 0.65, empty ≤ 10 % on the queries with a relevant memory, abstain
≥ 50 % on those without, F0.5 ≥ 0.45 in every repository, and in every repository the default's F0.5
above both "top k, no cut" and the best fixed threshold on the default's scale (the adjusted distance):
on the dev split that threshold is the best in hindsight over the whole track, under leave-one-out the
one fitted on the other repositories. Re-review (``rereview``): F0.5 ≥ 0.75, empty ≤ 10 %, abstain ≥ 70 %.
Leave-one-out: each fold's fitted profile, scored on the whole track, varies by at most 0.03 in F0.5.

Each track is judged on the default the review runs there: the model's cut on track A (first reviews),
the re-review scope ``same-pr`` on track B (every query a re-review). A default with no fitted constants
scores the same in every fold; its spread is reported as 0 and says so.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from kodiai.evaluation.evaluate import EvalResult
from kodiai.evaluation.loo import LooResult

GOALS: dict[str, dict[str, float]] = {
    "past-fixes": {"f0_5": 0.65, "empty": 0.10, "abstain": 0.50, "repo_f0_5": 0.45},
    "rereview": {"f0_5": 0.75, "empty": 0.10, "abstain": 0.70},
}
PER_REPO_TRACKS = ("past-fixes",)
MAX_FOLD_SPREAD = 0.03


class TargetCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    split: str
    """``dev`` or ``loo``."""
    track: str
    target: str
    value: str
    met: bool


def _track_checks(
    split: str, track: str, f0_5: float, empty: float | None, abstain: float | None
) -> list[TargetCheck]:
    goal = GOALS.get(track, {})

    def check(target: str, value: str, met: bool) -> TargetCheck:
        return TargetCheck(split=split, track=track, target=target, value=value, met=met)

    out: list[TargetCheck] = []
    if "f0_5" in goal:
        out.append(check(f"F0.5 ≥ {goal['f0_5']}", f"{f0_5:.3f}", f0_5 >= goal["f0_5"]))
    if "empty" in goal:
        e = empty or 0.0
        out.append(check(f"empty ≤ {goal['empty']:.0%}", f"{e:.0%}", e <= goal["empty"]))
    if "abstain" in goal:
        ok = abstain is not None and abstain >= goal["abstain"]
        value = "—" if abstain is None else f"{abstain:.0%}"
        out.append(check(f"abstain ≥ {goal['abstain']:.0%}", value, ok))
    return out


def _weakest_repo(
    split: str, track: str, repos: Mapping[str, Mapping[str, object]], default: str
) -> list[TargetCheck]:
    """F0.5 of the default in its weakest repository (repositories with a relevant memory only)."""
    goal = GOALS.get(track, {}).get("repo_f0_5")
    scores = {
        repo: getattr(by[default], "f0_5", 0.0)
        for repo, by in repos.items()
        if default in by and getattr(by[default], "with_relevant", None)
    }
    if goal is None or not scores:
        return []
    repo = min(scores, key=lambda r: scores[r])
    value = f"{scores[repo]:.3f} ({repo})"
    target = f"every repository F0.5 ≥ {goal}"
    return [TargetCheck(split=split, track=track, target=target, value=value, met=scores[repo] >= goal)]


def _per_repo(
    split: str, track: str, repos: Mapping[str, Mapping[str, object]], default: str, rivals: Mapping[str, str]
) -> list[TargetCheck]:
    out: list[TargetCheck] = _weakest_repo(split, track, repos, default)
    for repo, by_strategy in repos.items():
        mine = getattr(by_strategy.get(default), "f0_5", None)
        if mine is None or not getattr(by_strategy[default], "with_relevant", 0):
            continue
        for label, rival in rivals.items():
            theirs = getattr(by_strategy.get(rival), "f0_5", None)
            if theirs is None:
                continue
            out.append(
                TargetCheck(
                    split=split,
                    track=track,
                    target=f"{repo}: > {label}",
                    value=f"{mine:.3f} vs {theirs:.3f}",
                    met=mine > theirs,
                )
            )
    return out


def check_targets(dev: Mapping[str, EvalResult], loo: LooResult | None = None) -> list[TargetCheck]:
    """Every target that the given figures can answer."""
    out: list[TargetCheck] = []
    for track, result in dev.items():
        m = result.strategies[result.default]
        out += _track_checks("dev", track, m.f0_5, m.empty, m.abstain)
        if track in PER_REPO_TRACKS:
            top = f"top{result.options.top_k}"
            rivals = {top: top}
            if result.best_fixed is not None:
                rivals[f"best fixed ({result.best_fixed})"] = result.best_fixed
            out += _per_repo("dev", track, result.per_repo, result.default, rivals)
    if loo is not None:
        for track, strategies in loo.strategies.items():
            default = loo.defaults.get(track) or (dev[track].default if track in dev else "headgap")
            if default not in strategies:
                continue
            m = strategies[default]
            out += _track_checks("loo", track, m.f0_5, m.empty, m.abstain)
            top = f"top{next(iter(dev.values())).options.top_k}" if dev else "top5"
            if track in PER_REPO_TRACKS:
                out += _per_repo(
                    "loo", track, loo.per_repo[track], default, {top: top, "fixed (fitted per fold)": "fixed"}
                )
            spread = loo.stability_range(default, track)
            if default not in loo.fitted:
                value, met = f"0.000 ({default} has no fitted constants)", True
            elif spread is not None:
                lo, hi = spread
                value, met = f"{hi - lo:.3f} ({lo:.3f}–{hi:.3f})", hi - lo <= MAX_FOLD_SPREAD + 1e-9
            else:
                continue
            target = f"fold profiles' F0.5 spread ≤ {MAX_FOLD_SPREAD}"
            out.append(TargetCheck(split="loo", track=track, target=target, value=value, met=met))
    return out
