"""`kodiai eval retrieval` and `kodiai memory calibrate` over a tiny labelled set, with the real local MiniLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.learning.threshold.profiles import resolve_profile

pytestmark = pytest.mark.slow  # loads the local embedding model once per module

FINDINGS = [
    ("f1", "Fix nil pointer dereference in context release", "ctx.go", "2024-01-03T10:00:00Z"),
    ("f2", "Fix race when closing the router", "router.go", "2024-01-04T10:00:00Z"),
    ("f3", "Fix header parsing of quoted values", "helpers.go", "2024-01-05T10:00:00Z"),
    ("f4", "Fix memory leak in pool reuse", "ctx.go", "2024-01-06T10:00:00Z"),
    ("f5", "Fix typo-free redirect status handling", "redirect.go", "2024-01-07T10:00:00Z"),
    ("f6", "Fix cookie expiry parsing", "cookie.go", "2024-03-01T10:00:00Z"),
]
QUERIES = [
    (
        "q1",
        "Fix nil pointer in context methods after release\nLanguages: Go\nctx.go",
        ["f1", "f4"],
        "2024-02-01T00:00:00Z",
    ),
    ("q2", "Handle quoted header values\nLanguages: Go\nhelpers.go", ["f3"], "2024-02-02T00:00:00Z"),
    (
        "q3",
        "Add docs for the static middleware\nLanguages: Markdown\ndocs/static.md",
        [],
        "2024-02-03T00:00:00Z",
    ),
]


def write_tiny_set(root: Path) -> Path:
    rows = [
        {
            "id": fid,
            "repo": "gofiber/fiber",
            "owner": "gofiber",
            "finding_text": text,
            "file_path": path,
            "language": "Go",
            "severity": None,
            "category": "correctness",
            "created_at": created,
        }
        for fid, text, path, created in FINDINGS
    ]
    queries = [
        {
            "id": qid,
            "repo": "gofiber/fiber",
            "owner": "gofiber",
            "created_at": created,
            "query_text": text,
            "languages": ["Go"],
            "relevant_ids": relevant,
            "graded": dict.fromkeys(relevant, 2),
            "file_paths": [text.splitlines()[-1]],
        }
        for qid, text, relevant, created in QUERIES
    ]
    for sub in (root, root / "rereview"):
        sub.mkdir(parents=True, exist_ok=True)
        (sub / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        (sub / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_set(tmp_path_factory.mktemp("evalset"))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def run(*args: str) -> Any:
    """Invoke with the provider pinned (an EMBEDDING_PROVIDER in the environment must not change the test)."""
    return CliRunner().invoke(app, [*args, "--provider", "local"], catch_exceptions=False)


def test_eval_retrieval_json_is_keyed_by_strategy_with_default(data_dir: Path, cache_dir: Path) -> None:
    result = run(
        "eval",
        "retrieval",
        "--data",
        str(data_dir),
        "--cache",
        str(cache_dir),
        "--json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert {
        "default",
        "maxgap",
        "headgap",
        "headgap+stages",
        "headgap:vector",
        "headgap-v1",
        "top5",
        "top5+lexical",
        "fixed:0.2",
        "fixed:0.9",
        "fixed:2.3",
        "fixed@recency:4.3",
        "fixed:best",
        "fixed@recency:best",
        "per_repo",
        "grid",
    } <= set(out)
    # the review's default: all-MiniLM-L6-v2's profile cut, then both stages (shipped model)
    assert out["default"]["strategy"] == "headgap+stages"
    assert set(out["default"]["methods"]) <= {"rank:kept", "rank:abstain", "abstain", "headgap:band+lexical"}
    assert out["default"]["model"] == "all-MiniLM-L6-v2" and out["default"]["track"] == "past-fixes"
    for key in (
        "precision",
        "recall_at_5",
        "f1",
        "f0_5",
        "ndcg_at_5",
        "kept_per_query",
        "empty",
        "abstain",
        "methods",
    ):
        assert key in out["headgap"]
    assert (out["headgap"]["queries"], out["headgap"]["with_relevant"]) == (3, 2)
    assert all(m.startswith("headgap:") for m in out["headgap"]["methods"])
    assert set(out["maxgap"]["methods"]) <= {"adaptive", "percentile", "configured"}
    fixed = [v["f0_5"] for k, v in out.items() if k.startswith("fixed:") and k != "fixed:best"]
    assert out["fixed:best"]["f0_5"] == max(fixed)
    assert set(out["headgap"]["ci"]) == {"f0_5", "precision", "recall_at_5", "empty", "abstain"}
    assert set(out["per_repo"]) == {"gofiber/fiber"}
    assert list(cache_dir.glob("*.npz")), "embeddings are cached on disk"


def test_eval_retrieval_table_and_rereview_track(data_dir: Path, cache_dir: Path) -> None:
    result = run(
        "eval", "retrieval", "--data", str(data_dir), "--rereview", "--cache", str(cache_dir), "--no-recency"
    )
    assert result.exit_code == 0, result.output
    assert "track rereview" in result.stdout and "recency off" in result.stdout
    assert "headgap+stages (default)" in result.stdout and "(best in hindsight)" in result.stdout


def test_eval_reads_cut_strategy_and_calibration_from_kodiai_yml(
    data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    config = tmp_path / ".kodiai.yml"
    config.write_text(
        "knowledge:\n  retrieval:\n    cutStrategy: maxgap\n    calibration:\n      fallback: 0.9\n"
    )
    result = run(
        "eval",
        "retrieval",
        "--data",
        str(data_dir),
        "--cache",
        str(cache_dir),
        "--config",
        str(config),
        "--json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["default"]["strategy"] == "maxgap"
    config.write_text("knowledge:\n  retrieval:\n    abstain: false\n    secondStage: false\n")
    off = run(
        "eval", "retrieval", "--data", str(data_dir), "--cache", str(cache_dir), "--config", str(config)
    )
    assert off.exit_code == 0, off.output
    assert "headgap (default)" in off.stdout and "headgap+stages" not in off.stdout


def test_eval_retrieval_loo_needs_two_repositories(data_dir: Path, cache_dir: Path) -> None:
    """The tiny set has one repository: a fold would have nothing to calibrate on."""
    result = run("eval", "retrieval", "--data", str(data_dir), "--cache", str(cache_dir), "--loo", "--json")
    assert result.exit_code == 1
    assert "at least two repositories" in result.output


def test_eval_retrieval_loo_scores_each_repository_with_constants_fitted_on_the_others(
    tmp_path: Path, cache_dir: Path
) -> None:
    root = write_tiny_set(tmp_path / "two")
    for path in [
        sub / name for sub in (root, root / "rereview") for name in ("corpus.jsonl", "queries.jsonl")
    ]:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        copies = []
        for row in rows:
            copy = {**row, "id": "b-" + row["id"], "repo": "acme/api", "owner": "acme"}
            if "relevant_ids" in copy:
                copy["relevant_ids"] = ["b-" + r for r in row["relevant_ids"]]
                copy["graded"] = {"b-" + k: v for k, v in row["graded"].items()}
            copies.append(copy)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows + copies), encoding="utf-8")
    result = run("eval", "retrieval", "--data", str(root), "--cache", str(cache_dir), "--loo", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) == {"dev", "loo", "targets"}
    assert set(out["dev"]) == {"past-fixes", "rereview"}
    loo = out["loo"]
    assert [f["repo"] for f in loo["folds"]] == ["acme/api", "gofiber/fiber"]
    # the default's stages are trained per fold (never the shipped model, which saw every repository)
    assert {"headgap", "headgap+stages", "fixed", "fixed@recency", "headgap-v1"} <= set(loo["fitted"])
    assert loo["defaults"]["past-fixes"] == "headgap+stages"
    assert all("ranker p ≥" in f["params"]["headgap+stages"] for f in loo["folds"])
    for track in ("past-fixes", "rereview"):
        assert loo["strategies"][track]["headgap+stages"]["queries"] == 6  # every query scored once
        assert set(loo["per_repo"][track]) == {"acme/api", "gofiber/fiber"}
    targets = {(t["split"], t["track"], t["target"]) for t in out["targets"]}
    for split in ("dev", "loo"):
        for target in ("F0.5 ≥ 0.65", "empty ≤ 10%", "abstain ≥ 50%", "every repository F0.5 ≥ 0.45"):
            assert (split, "past-fixes", target) in targets
    table = run(
        "eval", "retrieval", "--data", str(root), "--cache", str(cache_dir), "--loo", "--bootstrap", "0"
    )
    assert table.exit_code == 0, table.output
    assert "Leave-one-repository-out" in table.stdout and "Targets" in table.stdout


def test_eval_bad_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "retrieval", "--data", str(tmp_path / "missing")])
    assert result.exit_code == 1
    assert "not a directory" in result.output


def test_eval_noop_provider_is_refused(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "retrieval", "--data", str(data_dir), "--provider", "none"])
    assert result.exit_code == 1
    assert "no-op" in result.output


def test_memory_calibrate_prints_kodiai_yml(data_dir: Path, cache_dir: Path) -> None:
    result = run("memory", "calibrate", "--data", str(data_dir), "--cache", str(cache_dir))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# kodiai memory calibrate: all-MiniLM-L6-v2")
    doc = YAML(typ="safe", pure=True).load(result.stdout)
    retrieval = doc["knowledge"]["retrieval"]
    assert retrieval["cutStrategy"] == "headgap"
    profile = resolve_profile("all-MiniLM-L6-v2", retrieval["calibration"])
    assert profile.strategy == "headgap"


def test_eval_and_calibrate_show_progress_on_stderr(data_dir: Path, tmp_path: Path) -> None:
    """A first run embeds every text (minutes on real data): each stage has a bar with its count, on
    stderr, so --json on stdout stays parseable; a cached run has nothing to embed and shows no bar."""
    cache = tmp_path / "cache"
    first = run("eval", "retrieval", "--data", str(data_dir), "--cache", str(cache), "--json")
    assert first.exit_code == 0, first.output
    json.loads(first.stdout)
    assert "past-fixes: embedding with all-MiniLM-L6-v2" in first.stderr
    # the findings and the queries, one count
    assert f"{len(FINDINGS) + len(QUERIES)}/{len(FINDINGS) + len(QUERIES)}" in first.stderr
    assert "past-fixes: queries through the chain" in first.stderr
    assert f"{len(QUERIES)}/{len(QUERIES)}" in first.stderr
    cached = run("eval", "retrieval", "--data", str(data_dir), "--cache", str(cache), "--json")
    assert "embedding" not in cached.stderr and "queries through the chain" in cached.stderr
    calibrated = run("memory", "calibrate", "--data", str(data_dir), "--cache", str(tmp_path / "fresh"))
    assert calibrated.exit_code == 0, calibrated.output
    assert calibrated.stdout.startswith("# kodiai memory calibrate")
    for stage in ("past-fixes: embedding", "rereview: queries through the chain"):
        assert stage in calibrated.stderr


def test_eval_stages_scores_each_repository_with_models_fitted_on_the_others_and_writes_the_model(
    tmp_path: Path, cache_dir: Path
) -> None:
    """``kodiai eval stages``: abstention and the learned ranker, leave-one-repository-out, and the model
    JSON the package ships (trained on every query) — loadable by the review's own loader."""
    from kodiai.learning.stages import StagesModel

    root = write_tiny_set(tmp_path / "stages")
    path = root / "queries.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows = [{**r, "file_paths": [r["query_text"].splitlines()[-1]]} for r in rows]
    copies = [
        {
            **r,
            "id": "b-" + r["id"],
            "repo": "acme/api",
            "owner": "acme",
            "relevant_ids": ["b-" + x for x in r["relevant_ids"]],
            "graded": {"b-" + k: v for k, v in r["graded"].items()},
        }
        for r in rows
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows + copies), encoding="utf-8")
    corpus = root / "corpus.jsonl"
    findings = [json.loads(line) for line in corpus.read_text().splitlines()]
    findings += [{**f, "id": "b-" + f["id"], "repo": "acme/api", "owner": "acme"} for f in findings]
    corpus.write_text("".join(json.dumps(f) + "\n" for f in findings), encoding="utf-8")
    model = tmp_path / "model.json"
    result = run(
        "eval",
        "stages",
        "--data",
        str(root),
        "--cache",
        str(cache_dir),
        "--json",
        "--bootstrap",
        "0",
        "--write-model",
        str(model),
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [f["repo"] for f in out["folds"]] == ["acme/api", "gofiber/fiber"]
    for variant in ("headgap", "abstain", "rank", "rank>abstain", "rank:no-files"):
        assert out["strategies"][variant]["queries"] == 6  # every query scored once, by the other fold
    assert set(out["per_repo"]) == {"acme/api", "gofiber/fiber"}
    assert 0.0 <= out["skips"]["skip_rate"] <= 1.0
    assert out["targets"]["rank>abstain"][0]["target"] == "F0.5 ≥ 0.65"
    assert len(out["targets"]["abstain:no-files"]) == 5
    assert out["chain_checked"] == 6  # the real chain with both stages on kept what the replay kept
    shipped = StagesModel.model_validate_json(model.read_text())
    assert "6 queries" in shipped.trained_on
