"""A finding's 👍/👎 outcome rows share its vector: retrieval shows the finding once (issue 14)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from learning_helpers import make_record

from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.memory_store import open_memory_store
from kodiai.learning.pipeline import retrieve_context

DIM = 32


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def test_outcome_rows_of_one_finding_fill_one_slot(tmp_path: Path) -> None:
    store = open_memory_store(str(tmp_path / "m.lance"), dimensions=DIM)
    rng = np.random.default_rng(3)
    query = unit(rng.normal(size=DIM))
    near = unit(query + 0.05 * rng.normal(size=DIM))
    store.write_memory(make_record("acme/api", 11, dim=DIM, model="m"), near)
    store.write_memory(make_record("acme/api", 11, outcome="thumbs_down", dim=DIM, model="m"), near)
    store.write_memory(make_record("acme/api", 11, outcome="thumbs_up", dim=DIM, model="m"), near)
    for fid in (12, 13):
        store.write_memory(
            make_record("acme/api", fid, dim=DIM, model="m"), unit(query + 0.4 * rng.normal(size=DIM))
        )
    out = retrieve_context(
        IsolationLayer(store),
        query,
        repo="acme/api",
        owner="acme",
        sharing_enabled=False,
        pr_languages=[],
        top_k=5,
        distance_threshold=2.0,
        adaptive=False,
    )
    findings = [r.record.finding_id for r in out.results]
    assert findings.count(11) == 1
    assert sorted(findings) == [11, 12, 13]
    assert out.quality.candidate_count == 3
    # The finding's own outcome (the oldest row) represents it.
    assert next(r for r in out.results if r.record.finding_id == 11).record.outcome == "accepted"
