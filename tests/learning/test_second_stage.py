"""The second stage (kodiai.learning.second_stage): skip rules measured on real pools, the ranker's
behaviour, and the shipped model reproduced from the pools it was trained on."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from kodiai.evaluation.stages import import_queries, train_shipped
from kodiai.learning.logistic import fit_logistic
from kodiai.learning.second_stage import (
    FEATURES,
    SKIP_RULES,
    PairInput,
    PrFiles,
    pair_features,
    rank_pool,
    skip_reason,
)
from kodiai.learning.stages import run_stages, shipped_model

FIXTURE = Path(__file__).parent / "data" / "stage_pools.json.gz"


def _rows() -> list[dict[str, object]]:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as handle:
        rows: list[dict[str, object]] = json.load(handle)
    return rows


@pytest.mark.parametrize("rule", SKIP_RULES)
def test_no_skip_rule_fires_on_every_or_on_no_real_pool(rule: str) -> None:
    """The dev set's real pools (both tracks): a rule true by construction (always) or never true is a
    failure, whatever the rule is."""
    queries = import_queries(_rows())
    rate = np.mean([skip_reason(q.pairs, q.pr) == rule for q in queries])
    assert 0.0 < rate < 1.0, f"{rule} fires on {rate:.0%} of {len(queries)} real pools"


def test_the_ranker_keeps_the_memory_on_a_changed_file_over_a_nearer_one_elsewhere() -> None:
    model = shipped_model().ranker
    pool = [
        PairInput(0.40, 1.8, 9.0, "lib/other/cache.go", True),  # nearest, lexically strongest
        PairInput(0.55, 1.8, 3.0, "pkg/server/router.go", True),  # a changed file
        PairInput(0.60, 1.8, 1.0, "docs/notes/unrelated.go", True),
    ]
    decision = rank_pool(pool, ["pkg/server/router.go", "pkg/server/router_test.go"], model, 5)
    assert decision.status == "used"
    assert decision.kept[0] == 1
    assert 0 not in decision.kept  # nothing ties the nearest memory to this PR's files


def test_a_pool_without_file_evidence_is_skipped_and_the_cut_stands() -> None:
    pool = [PairInput(0.4 + i / 10, 1.5, 2.0, f"lib/x{i}.rs", True) for i in range(6)]
    pr = PrFiles.of(["src/main.py"])
    assert skip_reason(pool, pr) == "no-file-evidence"
    assert skip_reason(pool, PrFiles.of([])) == "no-file-evidence"
    out = run_stages(pool, pr, shipped_model(), abstain=False, second_stage=True, top_k=5)
    assert out.kept is None and out.second_stage == "skipped:no-file-evidence"


def test_features_are_scale_free_in_the_channels_and_absolute_in_distance() -> None:
    pool = [PairInput(0.5, 1.2, 4.0, "a/b.py", True), PairInput(0.9, 1.0, 2.0, "a/c.py", None)]
    x = pair_features(pool, ["a/b.py"])
    assert x.shape == (2, len(FEATURES))
    row = dict(zip(FEATURES, x[0], strict=True))
    assert (row["vector"], row["lexical"], row["same_file"], row["distance"]) == (1.0, 1.0, 1.0, 0.5)
    assert dict(zip(FEATURES, x[1], strict=True))["language"] == 0.5


def test_training_is_deterministic_and_the_shipped_model_is_reproduced_from_its_pools() -> None:
    """``kodiai eval stages --write-model`` trained the package's model on the past-fixes pools; the same
    training on the exported pools gives the same weights and thresholds (the export rounds to 1e-6)."""
    queries = import_queries([r for r in _rows() if r["track"] == "past-fixes"])
    again = train_shipped(queries, "test")
    shipped = shipped_model()
    assert again.ranker.threshold == shipped.ranker.threshold
    assert again.abstain.threshold == shipped.abstain.threshold
    assert np.allclose(again.ranker.weights, shipped.ranker.weights, atol=1e-4)
    assert np.allclose(again.abstain.weights, shipped.abstain.weights, atol=1e-4)
    x = np.random.default_rng(0).normal(size=(50, 3))
    y = (x[:, 0] > 0).astype(float)
    assert fit_logistic(x, y) == fit_logistic(x, y)
