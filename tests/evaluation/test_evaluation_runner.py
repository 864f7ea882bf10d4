"""Evaluation plumbing: labelled data loading, the on-disk embedding cache, the time-sliced chain run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kodiai.evaluation.data import DataError, EvalDataset, EvalFinding, EvalQuery, load_dataset
from kodiai.evaluation.embedding_cache import EmbeddingCache, EmbeddingFailedError
from kodiai.evaluation.runner import ChainOptions, run_chain
from kodiai.learning.embeddings import InputType
from kodiai.learning.threshold.baselines import FixedCut
from kodiai.learning.threshold.head_gap import HeadGapCut, HeadGapParams
from kodiai.learning.threshold.max_gap import MaxGapCut
from learning.learning_helpers import at_distance, unit


def finding(
    fid: str, created: str, path: str = "src/a.go", repo: str = "acme/api", **extra: Any
) -> dict[str, Any]:
    return {
        "id": fid,
        "repo": repo,
        "owner": repo.split("/")[0],
        "finding_text": f"Fix {fid} handling",
        "file_path": path,
        "language": "Go",
        "severity": None,
        "category": "correctness",
        "created_at": created,
        **extra,
    }


def query(
    qid: str, created: str, relevant: list[str], repo: str = "acme/api", graded: dict[str, int] | None = None
) -> dict[str, Any]:
    return {
        "id": qid,
        "repo": repo,
        "owner": repo.split("/")[0],
        "created_at": created,
        "query_text": f"PR {qid}",
        "languages": ["Go"],
        "relevant_ids": relevant,
        "graded": graded or dict.fromkeys(relevant, 2),
    }


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


# ---- data -------------------------------------------------------------------------------------------


def test_load_dataset_reads_both_tracks(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "corpus.jsonl", [finding("f1", "2024-01-01T00:00:00Z")])
    write_jsonl(tmp_path / "queries.jsonl", [query("q1", "2025-01-01T00:00:00+02:00", ["f1"])])
    write_jsonl(tmp_path / "rereview" / "corpus.jsonl", [finding("r1", "2024-01-01T00:00:00Z")])
    write_jsonl(tmp_path / "rereview" / "queries.jsonl", [query("rq", "2025-01-01T00:00:00Z", [])])
    a = load_dataset(tmp_path)
    b = load_dataset(tmp_path, rereview=True)
    assert (a.name, [f.id for f in a.findings]) == ("past-fixes", ["f1"])
    assert (b.name, [q.id for q in b.queries]) == ("rereview", ["rq"])
    assert a.queries[0].created_at == datetime(2024, 12, 31, 22, tzinfo=UTC)


def test_memory_text_is_step_50_without_a_missing_severity() -> None:
    f = EvalFinding.model_validate(finding("f1", "2024-01-01T00:00:00Z"))
    assert f.memory_text() == "[correctness]\nFix f1 handling\nFile: src/a.go"
    g = EvalFinding.model_validate(finding("f2", "2024-01-01T00:00:00Z", severity="major"))
    assert g.memory_text() == "[major] [correctness]\nFix f2 handling\nFile: src/a.go"


def test_grades_merge_relevant_ids_as_grade_2() -> None:
    q = EvalQuery.model_validate(query("q", "2025-01-01T00:00:00Z", ["a"], graded={"b": 1}))
    assert q.grades() == {"b": 1, "a": 2}


def test_bad_line_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text(json.dumps(finding("f1", "2024-01-01T00:00:00Z")) + "\n{oops\n")
    write_jsonl(tmp_path / "queries.jsonl", [query("q1", "2025-01-01T00:00:00Z", [])])
    with pytest.raises(DataError, match=r"corpus\.jsonl:2"):
        load_dataset(tmp_path)


def test_duplicate_ids_and_missing_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a directory"):
        load_dataset(tmp_path / "nope")
    write_jsonl(tmp_path / "corpus.jsonl", [finding("f1", "2024-01-01T00:00:00Z")] * 2)
    write_jsonl(tmp_path / "queries.jsonl", [query("q1", "2025-01-01T00:00:00Z", [])])
    with pytest.raises(DataError, match="duplicate finding id 'f1'"):
        load_dataset(tmp_path)
    (tmp_path / "rereview").mkdir()
    with pytest.raises(DataError, match="file not found"):
        load_dataset(tmp_path, rereview=True)


# ---- embedding cache ------------------------------------------------------------------------------


class CountingEmbedder:
    """A deterministic in-process embedder (hash-seeded unit vectors) that counts what it embeds."""

    def __init__(self, model: str = "test-model", dimensions: int = 8, fail_on: str | None = None) -> None:
        self.model = model
        self.dimensions = dimensions
        self.calls: list[str] = []
        self._fail_on = fail_on

    def generate(self, text: str, input_type: InputType) -> np.ndarray | None:
        return self.generate_many([text], input_type)[0]

    def generate_many(self, texts: Sequence[str], input_type: InputType) -> list[np.ndarray | None]:
        self.calls.extend(texts)
        out: list[np.ndarray | None] = []
        for text in texts:
            if text == self._fail_on:
                out.append(None)
                continue
            seed = int.from_bytes(f"{input_type}{text}".encode()[:8].ljust(8, b"\0"), "little")
            out.append(unit(np.random.default_rng(seed), self.dimensions))
        return out


def test_cache_embeds_once_and_reads_back_from_disk(tmp_path: Path) -> None:
    first = CountingEmbedder()
    vectors = EmbeddingCache(tmp_path, first).embed(["a", "b", "a"], "document")
    assert first.calls == ["a", "b"]
    again = CountingEmbedder()
    cache = EmbeddingCache(tmp_path, again)
    assert np.array_equal(cache.embed(["a", "b", "a"], "document"), vectors)
    assert again.calls == []
    assert (cache.hits, cache.misses) == (3, 0)


def test_cache_key_includes_model_and_input_type(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path, CountingEmbedder()).embed(["a"], "document")
    other_model = CountingEmbedder(model="other")
    EmbeddingCache(tmp_path, other_model).embed(["a"], "document")
    as_query = CountingEmbedder()
    EmbeddingCache(tmp_path, as_query).embed(["a"], "query")
    assert other_model.calls == ["a"] and as_query.calls == ["a"]


def test_cache_raises_on_a_failed_embedding_and_keeps_what_it_saved(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path, CountingEmbedder()).embed(["a"], "document")
    with pytest.raises(EmbeddingFailedError, match="1 of 2"):
        EmbeddingCache(tmp_path, CountingEmbedder(fail_on="bad")).embed(["b", "bad"], "document")
    later = CountingEmbedder()
    EmbeddingCache(tmp_path, later).embed(["a"], "document")
    assert later.calls == []


# ---- the chain over a time-sliced real store -------------------------------------------------------


def _dataset() -> tuple[EvalDataset, np.ndarray, np.ndarray]:
    """Two queries in time order; f_new (closest to q1) is created after q1 and before q2."""
    rng = np.random.default_rng(3)
    q_vec = unit(rng, 16)
    findings = [
        finding("f_old", "2024-01-01T00:00:00Z"),
        finding("f_far", "2024-01-02T00:00:00Z"),
        finding("f_new", "2025-02-01T00:00:00Z"),
        finding("f_other_repo", "2024-01-01T00:00:00Z", repo="acme/web"),
    ]
    queries = [
        query("q2", "2025-03-01T00:00:00Z", ["f_new"]),
        query("q1", "2025-01-01T00:00:00Z", ["f_old"]),
    ]
    ds = EvalDataset(
        name="t",
        findings=[EvalFinding.model_validate(f) for f in findings],
        queries=[EvalQuery.model_validate(q) for q in queries],
    )
    fv = np.stack([at_distance(q_vec, d, rng) for d in (0.5, 1.2, 0.2, 0.1)])
    return ds, np.stack([q_vec, q_vec]), fv


def test_each_query_sees_only_older_memories_of_its_repo() -> None:
    ds, qv, fv = _dataset()
    strategies = {"fixed:1.5": FixedCut(1.5), "headgap": HeadGapCut(HeadGapParams(band=10.0))}
    judgements, pools = run_chain(ds, qv, fv, strategies, model="m", options=ChainOptions(recency=False))
    by_query = {j.query_id: j.kept for j in judgements["fixed:1.5"]}
    assert set(by_query["q1"]) == {"f_old", "f_far"}  # f_new is newer than q1; f_other_repo is another repo
    assert by_query["q2"][0] == "f_new"
    assert [j.query_id for j in judgements["headgap"]] == ["q2", "q1"]  # dataset order
    assert {p.query_id for p in pools} == {"q1", "q2"}
    pool_q1 = next(p for p in pools if p.query_id == "q1")
    assert [c.id for c in pool_q1.vector] == ["f_old", "f_far"]
    assert pool_q1.fused is not None  # the lexical channel ran (ChainOptions.lexical defaults to on)


def test_methods_and_labels_reach_the_judgements() -> None:
    ds, qv, fv = _dataset()
    judgements, _ = run_chain(ds, qv, fv, {"maxgap": MaxGapCut()}, model="m")
    assert {j.method for j in judgements["maxgap"]} <= {"adaptive", "percentile", "configured"}
    q1 = next(j for j in judgements["maxgap"] if j.query_id == "q1")
    assert q1.relevant == frozenset({"f_old"}) and q1.graded == {"f_old": 2}


def test_vector_count_mismatch_is_an_error() -> None:
    ds, qv, fv = _dataset()
    with pytest.raises(ValueError, match="one vector per query"):
        run_chain(ds, qv[:1], fv, {"maxgap": MaxGapCut()}, model="m")
