"""The evaluation harness: one distance scale for the cuts compared, a fixed grid that reaches every
candidate, the "top k, no cut" row, per-repository figures, bootstrap intervals, the replay check, and
leave-one-repository-out (each repository scored only by constants fitted without it)."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from kodiai.evaluation.calibration import CalibrationTargets, LabelledPool
from kodiai.evaluation.data import EvalDataset, EvalFinding, EvalQuery
from kodiai.evaluation.evaluate import (
    build_strategies,
    check_replays,
    evaluate,
    fixed_grid,
    max_distance,
    replay_judgements,
)
from kodiai.evaluation.loo import choose, fitted_procedures, leave_one_repo_out
from kodiai.evaluation.metrics import QueryJudgement, aggregate, bootstrap
from kodiai.evaluation.runner import ChainOptions
from kodiai.evaluation.targets import check_targets
from kodiai.learning.embeddings import InputType
from kodiai.learning.threshold.baselines import FixedCut, TopKCut
from kodiai.learning.threshold.head_gap import HeadGapCut, HeadGapParams
from kodiai.learning.threshold.profiles import MINILM_PROFILE
from kodiai.learning.threshold.types import Candidate
from learning.learning_helpers import unit

# ---- scales and grids -----------------------------------------------------------------------------------


def test_fixed_grids_reach_every_candidate() -> None:
    """2 × the cross-language penalty before recency (2.3), × the largest recency multiplier after (4.255)."""
    adjusted, weighted = fixed_grid(max_distance(recency=False)), fixed_grid(max_distance(recency=True))
    assert adjusted[0] == 0.05 and adjusted[-1] >= 2.3 >= 2.0
    assert weighted[-1] >= 4.255
    assert all(round(b - a, 6) == 0.05 for a, b in itertools.pairwise(adjusted))


def test_the_compared_cuts_share_the_default_scale() -> None:
    """headgap and the fixed:T baselines cut before recency (the chain hands them the unweighted list);
    the original's order has its own, clearly named family."""
    strategies, default, _ = build_strategies("all-MiniLM-L6-v2", options=ChainOptions())
    assert default == "headgap"
    assert {"maxgap", "headgap", "headgap:vector", "headgap-v1", "top5", "top5+lexical"} <= set(strategies)
    for name, cut in strategies.items():
        if name.startswith("fixed:") or name.startswith("headgap") or name.startswith("top"):
            assert cut.owns_recency, name
    assert isinstance(strategies["fixed:0.8"], FixedCut) and strategies["fixed:0.8"].scale == "adjusted"
    assert strategies["fixed@recency:1.8"].scale == "recency"  # type: ignore[attr-defined]
    assert not strategies["maxgap"].owns_recency  # the original, unchanged
    no_lexical, _, _ = build_strategies("all-MiniLM-L6-v2", options=ChainOptions(lexical=False))
    assert "headgap:vector" not in no_lexical and "top5+lexical" not in no_lexical


# ---- bootstrap -----------------------------------------------------------------------------------------


def _j(qid: str, repo: str, kept: list[str], relevant: set[str]) -> QueryJudgement:
    return QueryJudgement(
        query_id=qid,
        kept=kept,
        relevant=frozenset(relevant),
        graded=dict.fromkeys(relevant, 2),
        method="m",
        repo=repo,
    )


def test_bootstrap_is_reproducible_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(0)
    judgements = [
        _j(f"q{i}", f"r{i % 3}", ["a"] if rng.random() < 0.6 else ["x"], {"a"}) for i in range(30)
    ] + [_j(f"n{i}", f"r{i % 3}", [] if i % 2 else ["x"], set()) for i in range(6)]
    first, again = bootstrap(judgements), bootstrap(judgements)
    assert first == again
    m = aggregate(judgements)
    for key in ("f0_5", "precision", "recall_at_5", "empty", "abstain"):
        lo, hi = first[key]
        assert lo <= getattr(m, key) <= hi
    assert first["f0_5"][0] < first["f0_5"][1]


def test_bootstrap_keeps_positives_and_negatives_apart() -> None:
    """All positives perfect, all negatives answered: every replicate has the same figures."""
    judgements = [_j(f"q{i}", "r", ["a"], {"a"}) for i in range(5)] + [_j("n", "r", ["x"], set())]
    ci = bootstrap(judgements)
    assert ci["f0_5"] == (1.0, 1.0) and ci["abstain"] == (0.0, 0.0) and ci["empty"] == (0.0, 0.0)


# ---- leave-one-repository-out ----------------------------------------------------------------------------


def _pool(qid: str, repo: str, relevant: set[str], rows: list[tuple[str, float]]) -> LabelledPool:
    return LabelledPool(
        query_id=qid,
        repo=repo,
        relevant=frozenset(relevant),
        graded=dict.fromkeys(relevant, 2),
        vector=[Candidate(i, d) for i, d in rows],
    )


def _repo_pools(repo: str, n_relevant: int, count: int = 4) -> list[LabelledPool]:
    """Queries whose relevant memories are the first ``n_relevant`` of evenly spaced candidates."""
    out = []
    for q in range(count):
        rows = [(f"{repo}-{q}-{k}", 0.5 + 0.05 * k) for k in range(10)]
        out.append(_pool(f"{repo}-{q}", repo, {rows[k][0] for k in range(n_relevant)}, rows))
    return out


def test_each_repository_is_scored_by_constants_fitted_without_it() -> None:
    """Two repositories want a narrow band (1 relevant), the largest one a wide band (4): the wide one's
    fold is fitted on the narrow ones only, so it is scored with a narrow band — and does worse."""
    pools = _repo_pools("a/one", 1) + _repo_pools("a/two", 1) + _repo_pools("a/wide", 4, count=12)
    tracks = {"past-fixes": pools}
    procedures = fitted_procedures(
        model="m",
        profile=MINILM_PROFILE,
        top_k=5,
        lexical=False,
        recency=False,
        targets=CalibrationTargets(),
    )
    loo = leave_one_repo_out(tracks, procedures, {"top5": TopKCut()}, top_k=5, bootstrap_reps=50)
    folds = {f.repo: f for f in loo.folds}
    assert folds["a/wide"].params["headgap"].startswith("band 0.1")
    assert not folds["a/one"].params["headgap"].startswith("band 0.1")  # fitted with a/wide in
    per_repo = loo.per_repo["past-fixes"]
    assert per_repo["a/wide"]["headgap"].f0_5 < 1.0
    assert loo.strategies["past-fixes"]["headgap"].queries == 20  # every query scored exactly once
    assert (
        loo.strategies["past-fixes"]["top5"].f0_5
        == aggregate(replay_judgements(tracks["past-fixes"], TopKCut(), 5)).f0_5
    )
    lo, hi = loo.stability_range("headgap", "past-fixes") or (0, 0)
    assert 0 <= lo <= hi <= 1
    assert loo.strategies["past-fixes"]["headgap"].ci is not None


def test_leave_one_out_needs_two_repositories() -> None:
    with pytest.raises(ValueError, match="at least two repositories"):
        leave_one_repo_out({"t": _repo_pools("a/one", 1)}, {}, {}, top_k=5)


def test_choose_prefers_feasible_then_f05() -> None:
    pools = {"t": _repo_pools("a/one", 2)}
    cuts = [FixedCut(t) for t in (0.45, 0.52, 0.57, 0.9)]
    best = choose(cuts, pools, 5, CalibrationTargets())
    assert isinstance(best, FixedCut) and best.threshold == 0.57  # keeps exactly the two relevant


# ---- the chain, end to end, with the replay check ----------------------------------------------------------


class HashEmbedder:
    """Deterministic unit vectors from a text's words (shared words → nearby vectors), no model."""

    model = "hash-embedder"
    dimensions = 64

    def generate(self, text: str, input_type: InputType) -> np.ndarray | None:
        return self.generate_many([text], input_type)[0]

    def generate_many(self, texts: Sequence[str], input_type: InputType) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = []
        for text in texts:
            v = np.zeros(self.dimensions)
            for word in text.lower().replace("/", " ").replace(".", " ").split():
                v += unit(np.random.default_rng(zlib.crc32(word.encode())), self.dimensions)
            v += 0.3 * unit(np.random.default_rng(len(text)), self.dimensions)
            out.append((v / np.linalg.norm(v)).astype(np.float32))
        return out


def _dataset() -> EvalDataset:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    findings, queries = [], []
    for r, repo in enumerate(("acme/api", "acme/web")):
        for k in range(12):
            findings.append(
                EvalFinding(
                    id=f"{r}-f{k}",
                    repo=repo,
                    owner="acme",
                    finding_text=f"Fix problem {k % 4} in module{k}",
                    file_path=f"src/module{k}.go",
                    category="correctness",
                    created_at=start + timedelta(days=k),
                )
            )
        for q in range(4):
            relevant = [f"{r}-f{q}", f"{r}-f{q + 4}"] if q < 3 else []
            queries.append(
                EvalQuery(
                    id=f"{r}-q{q}",
                    repo=repo,
                    owner="acme",
                    created_at=start + timedelta(days=60 + q),
                    query_text=f"Fix problem {q} in module{q}\nLanguages: Go\nsrc/module{q}.go\nsrc/module{q + 4}.go",
                    languages=["Go"],
                    relevant_ids=relevant,
                )
            )
    return EvalDataset(name="past-fixes", findings=findings, queries=queries)


def test_evaluate_runs_every_strategy_through_the_chain_and_the_replays_agree(tmp_path: Path) -> None:
    """evaluate() raises if any replay (used by calibration and leave-one-out) disagrees with the chain."""
    result, pools = evaluate(_dataset(), HashEmbedder(), tmp_path / "cache", bootstrap_reps=100)
    assert result.default == "headgap" and len(pools) == 8
    assert all(p.fused is not None for p in pools)
    assert set(result.per_repo) == {"acme/api", "acme/web"}
    assert result.best_fixed is not None and result.best_fixed.startswith("fixed:")
    assert result.grid["fixed"][1] >= 2.3 and result.grid["fixed@recency"][1] >= 4.255
    names = [n for n in result.strategies if n.startswith("fixed:")]
    assert result.strategies[names[-1]].f0_5 == result.strategies["top5"].f0_5  # the last keeps everything
    m = result.strategies["headgap"]
    assert m.ci is not None and m.with_relevant == 6 and m.without_relevant == 2
    checks = check_targets({"past-fixes": result})
    assert {c.target for c in checks} >= {"F0.5 ≥ 0.65", "empty ≤ 10%", "acme/api: > top5"}


def test_check_replays_catches_a_disagreement() -> None:
    pools = _repo_pools("a/one", 1)
    cut = HeadGapCut(HeadGapParams(band=0.2))
    honest = {"h": replay_judgements(pools, cut, 5)}
    check_replays(honest, pools, {"h": cut}, 5)
    lying = {"h": [j.model_copy(update={"kept": []}) for j in honest["h"]]}
    with pytest.raises(RuntimeError, match="the replay keeps"):
        check_replays(lying, pools, {"h": cut}, 5)
