"""Parity: every retrieval row of functions.jsonl (adaptive threshold, rerank, recency, query)."""

from __future__ import annotations

import math
from typing import Any

from learning_helpers import iso, reranked_result, retrieval_result

from kodiai.learning.adaptive_threshold import AdaptiveThresholdConfig, compute_adaptive_threshold
from kodiai.learning.recency import RecencyConfig, apply_recency_weighting
from kodiai.learning.retrieval_query import RetrievalQuerySignals, build_retrieval_query
from support.vectors import assert_matches, cases, check_rows, snake_keys

ADAPTIVE = cases("functions.jsonl", "adaptive_threshold")
RERANK = cases("functions.jsonl", "rerank_by_language")
RECENCY = cases("functions.jsonl", "apply_recency_weighting")
QUERY = cases("functions.jsonl", "build_retrieval_query")


def test_row_counts() -> None:
    assert (len(ADAPTIVE), len(RERANK), len(RECENCY), len(QUERY)) == (400, 200, 200, 200)


def test_adaptive_threshold() -> None:
    check_rows(ADAPTIVE, _adaptive_threshold)


def _adaptive_threshold(row: dict[str, Any]) -> None:
    args = row["args"]
    config = AdaptiveThresholdConfig.model_validate(args["config"]) if "config" in args else None
    result = compute_adaptive_threshold(args["distances"], args["configuredThreshold"], config).model_dump()
    # JSON.stringify writes NaN as null.
    result = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in result.items()}
    assert_matches(result, snake_keys(row["expected"]), drop_none=False)


def test_rerank_by_language() -> None:
    check_rows(RERANK, _rerank_by_language)


def _rerank_by_language(row: dict[str, Any]) -> None:
    from kodiai.learning.rerank import RerankConfig, rerank_by_language

    args = row["args"]
    config = RerankConfig.model_validate(args["config"]) if "config" in args else None
    out = rerank_by_language([retrieval_result(r) for r in args["results"]], args["prLanguages"], config)
    actual = [
        {
            "memory_id": r.memory_id,
            "adjusted_distance": r.adjusted_distance,
            "language_match": r.language_match,
        }
        for r in out
    ]
    assert_matches(actual, snake_keys(row["expected"]))


def test_apply_recency_weighting() -> None:
    check_rows(RECENCY, _apply_recency_weighting)


def _apply_recency_weighting(row: dict[str, Any]) -> None:
    args = row["args"]
    config = RecencyConfig.model_validate(args["config"]) if "config" in args else None
    out = apply_recency_weighting([reranked_result(r) for r in args["results"]], iso(args["now"]), config)
    actual = [{"memory_id": r.memory_id, "adjusted_distance": r.adjusted_distance} for r in out]
    assert_matches(actual, snake_keys(row["expected"]))


def test_build_retrieval_query() -> None:
    check_rows(QUERY, _build_retrieval_query)


def _build_retrieval_query(row: dict[str, Any]) -> None:
    signals = RetrievalQuerySignals.model_validate(snake_keys(row["args"]["signals"]))
    assert build_retrieval_query(signals) == row["expected"]
