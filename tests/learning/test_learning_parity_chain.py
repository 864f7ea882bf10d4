"""Parity: all 56 rows of chain.jsonl, end to end on a real LanceDB store in a temporary directory."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from learning_helpers import iso

from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.memory_store import open_memory_store
from kodiai.learning.pipeline import retrieve_context
from kodiai.learning.types import LearningMemoryRecord
from support.vectors import VECTORS, assert_matches, cases, ids

ROWS = cases("chain.jsonl")
_spec = importlib.util.spec_from_file_location("chain_vectors", VECTORS / "chain_vectors.py")
assert _spec is not None and _spec.loader is not None
chain_vectors = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chain_vectors)


def test_all_rows_present() -> None:
    assert len(ROWS) == 56


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_retrieval_chain(row: dict[str, Any], tmp_path: Path) -> None:
    args = row["args"]
    memories, query = chain_vectors.vectors(args["caseSeed"], len(args["memories"]))
    store = open_memory_store(str(tmp_path / "lance"), dimensions=1024)
    # One batch: the same ids, duplicate skips and rows as one write per memory (every memory carries its
    # createdAt; no row reaches index_check_every), without one LanceDB commit per memory (~10 ms each).
    records = [LearningMemoryRecord.model_validate(memory) for memory in args["memories"]]
    store.write_memories(records, memories)
    out = retrieve_context(
        IsolationLayer(store),
        query,
        repo=args["repo"],
        owner=args["owner"],
        sharing_enabled=args["sharingEnabled"],
        pr_languages=args["prLanguages"],
        top_k=args["topK"],
        distance_threshold=args["distanceThreshold"],
        adaptive=args["adaptive"],
        now=iso(args["now"]),
    )
    actual = {
        "candidates": [
            {"findingId": c.record.finding_id, "repo": c.record.repo, "distance": c.distance}
            for c in out.candidates
        ],
        "results": [
            {
                "findingId": r.record.finding_id,
                "repo": r.record.repo,
                "distance": r.distance,
                "adjustedDistance": r.adjusted_distance,
                "languageMatch": r.language_match,
            }
            for r in out.results
        ],
        "threshold": {
            "threshold": out.threshold.threshold,
            "method": out.threshold.method,
            "candidateCount": out.threshold.candidate_count,
            "gapSize": out.threshold.gap_size,
            "gapIndex": out.threshold.gap_index,
        },
        "quality": {
            "resultCount": out.quality.result_count,
            "avgDistance": out.quality.avg_distance,
            "languageMatchRatio": out.quality.language_match_ratio,
            "thresholdMethod": out.quality.threshold_method,
            "distanceThreshold": out.quality.distance_threshold,
            "topK": out.quality.top_k,
        },
    }
    assert_matches(actual, row["expected"], rel=1e-4)
    store.close()
