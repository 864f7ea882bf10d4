"""Abstention (kodiai.learning.abstain): its firing rate on real pools (the dev set's captured pools, in
tests/learning/data/stage_pools.json.gz) and on synthetic ones is strictly between 0 and 1, and it moves
monotonically with its evidence — so it cannot silently become "always" or "never"."""

from __future__ import annotations

import gzip
import itertools
import json
from functools import cache
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kodiai.evaluation.stages import StageQuery, import_queries
from kodiai.learning.abstain import SIGNALS, AbstainModel, decide, pool_signals
from kodiai.learning.second_stage import PairInput, PrFiles
from kodiai.learning.stages import shipped_model

FIXTURE = Path(__file__).parent / "data" / "stage_pools.json.gz"


@cache
def real_queries() -> tuple[StageQuery, ...]:
    """The dev set's pools (both tracks), exported by ``export_queries`` from an eval run."""
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as handle:
        return tuple(import_queries(json.load(handle)))


def fires(q: StageQuery, model: AbstainModel) -> bool:
    return decide(q.pairs, q.pr, model).abstain


def test_on_real_pools_it_fires_on_some_but_not_all_and_mostly_where_nothing_is_relevant() -> None:
    model = shipped_model().abstain
    queries = real_queries()
    rate = np.mean([fires(q, model) for q in queries])
    assert 0.0 < rate < 1.0
    negatives = [fires(q, model) for q in queries if not q.relevant]
    positives = [fires(q, model) for q in queries if q.relevant]
    # far more often on the queries without relevant memories than on those with one
    assert np.mean(negatives) >= 0.5 and np.mean(positives) <= 0.10


def _pool(rng: np.random.Generator, n: int, head: float, spread: float) -> list[PairInput]:
    d = np.sort(head + rng.uniform(0.0, spread, size=n))
    files = [f"src/other/mod{int(i)}.py" for i in rng.integers(0, 50, size=n)]
    lexical = rng.uniform(0.0, 8.0, size=n)
    return [PairInput(float(x), 1.5, float(s), f, True) for x, s, f in zip(d, lexical, files, strict=True)]


PR = PrFiles.of(["src/app/handler.py", "src/app/routes.py"])


def _with_evidence(pool: list[PairInput], level: int) -> list[PairInput]:
    """The same pool with its nearest memory moved onto the PR's files: 0 none, 1 another file in a changed
    directory, 2 a changed file."""
    path = {0: pool[0].file_path, 1: "src/app/models.py", 2: "src/app/handler.py"}[level]
    head = pool[0]
    return [PairInput(head.distance, head.multiplier, head.lexical, path, True), *pool[1:]]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(5, 60),
    head=st.floats(0.2, 1.0),
    spread=st.floats(0.05, 0.8),
)
def test_more_file_evidence_never_makes_it_abstain_more(
    seed: int, n: int, head: float, spread: float
) -> None:
    model = shipped_model().abstain
    pool = _pool(np.random.default_rng(seed), n, head, spread)
    p = [model.probability(pool_signals(_with_evidence(pool, level), PR)) for level in (0, 1, 2)]
    assert p[0] <= p[1] + 1e-12 <= p[2] + 2e-12


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(5, 60), spread=st.floats(0.1, 0.8))
def test_a_more_prominent_head_never_makes_it_abstain_more(seed: int, n: int, spread: float) -> None:
    """Moving the best match closer (the rest unchanged) raises its prominence: the probability of "a
    relevant memory is here" does not fall (the model's prominence weight outweighs its distance weight)."""
    model = shipped_model().abstain
    base = _pool(np.random.default_rng(seed), n, 0.8, spread)
    probs = []
    for shift in (0.0, 0.1, 0.2, 0.3):
        head = base[0]
        moved = [PairInput(head.distance - shift, 1.5, head.lexical, head.file_path, True), *base[1:]]
        probs.append(model.probability(pool_signals(moved, PR)))
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(probs))


def test_on_synthetic_pools_the_firing_rate_is_strictly_between_0_and_1_and_falls_with_evidence() -> None:
    model = shipped_model().abstain
    rng = np.random.default_rng(7)
    pools = [_pool(rng, int(rng.integers(5, 60)), float(rng.uniform(0.3, 1.0)), 0.5) for _ in range(300)]
    rates = [
        np.mean([decide(_with_evidence(p, level), PR, model).abstain for p in pools]) for level in (0, 1, 2)
    ]
    assert 0.0 < np.mean(rates) < 1.0
    assert rates[0] > 0.5 and rates[2] < 0.5
    assert rates[0] >= rates[1] >= rates[2]


def test_the_decision_names_its_weakest_signal_and_keeps_an_empty_pool_empty() -> None:
    model = shipped_model().abstain
    weak = _pool(np.random.default_rng(3), 30, 0.9, 0.1)
    verdict = decide(weak, PR, model)
    assert verdict.abstain and "weakest=" in verdict.reason and verdict.reason.split("weakest=")[1] in SIGNALS
    assert decide([], PR, model).abstain
    strong = _with_evidence(_pool(np.random.default_rng(3), 30, 0.3, 0.6), 2)
    assert not decide(strong, PR, model).abstain
