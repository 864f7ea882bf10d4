"""`kodiai memory list` and the outcome/retired counts of `kodiai memory stats`, through typer's CliRunner on
a real LanceDB store and a real knowledge SQLite file with reviews, findings, kept reactions and governance
rows (issue 14: provenance for every learned memory)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import Result
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.learning.embeddings import LOCAL_DIMENSIONS, LOCAL_MODEL
from kodiai.learning.memory_store import open_memory_store
from kodiai.learning.setup import memory_table_name
from kodiai.learning.types import LearningMemoryRecord
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import (
    FeedbackReactionRecord,
    FindingRecord,
    MemoryGovernanceRecord,
    ReviewRecord,
)

runner = CliRunner()
SURFACE = "pull_request_review_comment"
CLEAN_ENV: dict[str, str | None] = {"KNOWLEDGE_DB_PATH": None, "LEARNING_MEMORY_URI": None}


def _record(
    repo: str,
    finding_id: int | None,
    outcome: str,
    created_at: str,
    text: str,
    *,
    model: str = LOCAL_MODEL,
    stale: bool = False,
) -> LearningMemoryRecord:
    return LearningMemoryRecord(
        repo=repo,
        owner=repo.split("/")[0],
        finding_id=finding_id,
        review_id=None,
        source_repo=repo,
        finding_text=text,
        severity="major",
        category="correctness",
        file_path="src/app.ts",
        outcome=outcome,
        embedding_model=model,
        embedding_dim=LOCAL_DIMENSIONS,
        stale=stale,
        created_at=created_at,
    )


MEMORIES = [
    _record("acme/api", 1001, "accepted", "2026-01-02 10:00:00", "Possible null dereference of user"),
    _record("acme/api", 1002, "suppressed", "2026-01-03 10:00:00", "Unused import of lodash"),
    _record("acme/api", 1001, "thumbs_down", "2026-01-05 09:00:00", "Possible null dereference of user"),
    _record(
        "acme/api", None, "accepted", "2026-01-06 12:00:00", "Prefer the repo's Result type over raising"
    ),
    _record("acme/web", 2001, "thumbs_up", "2026-01-07 10:00:00", "Missing key prop in list render"),
    _record("acme/web", 2002, "accepted", "2026-01-08 10:00:00", "Old model memory", model="old", stale=True),
]


@pytest.fixture
def uri(tmp_path: Path) -> Path:
    """A real LanceDB store in the local embedder's table, written with random unit vectors (ids 1..6)."""
    path = tmp_path / "m.lance"
    store = open_memory_store(str(path), dimensions=LOCAL_DIMENSIONS, table_name=memory_table_name(384))
    rng = np.random.default_rng(14)
    vectors = rng.normal(size=(len(MEMORIES), LOCAL_DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert store.write_memories(MEMORIES, vectors) == [1, 2, 3, 4, 5, 6]
    return path


def _finding(review_id: int, comment_id: int, title: str) -> FindingRecord:
    return FindingRecord(
        review_id=review_id,
        file_path="src/app.ts",
        severity="major",
        category="correctness",
        confidence=80,
        title=title,
        comment_id=comment_id,
        comment_surface=SURFACE,
        review_output_key=f"key-{comment_id}",
    )


def _reaction(
    store: KnowledgeStore, repo: str, comment_id: int, reaction_id: int, content: str, who: str, at: str
) -> FeedbackReactionRecord:
    (finding_id, review_id), *_ = store._db.query(
        "SELECT id, review_id FROM findings WHERE comment_id = ?", (comment_id,)
    )
    return FeedbackReactionRecord(
        repo=repo,
        review_id=review_id,
        finding_id=finding_id,
        comment_id=comment_id,
        comment_surface=SURFACE,
        reaction_id=reaction_id,
        reaction_content=content,
        reactor_login=who,
        reacted_at=at,
        severity="major",
        category="correctness",
        file_path="src/app.ts",
        title="t",
    )


@pytest.fixture
def knowledge(tmp_path: Path) -> Path:
    """A real knowledge DB: PR 42 posted findings 1001/1002, PR 43 finding 1003 (later forgotten by
    `maint`), acme/web PR 7 finding 2001; kept reactions; carol's `remember` that wrote memory #4."""
    path = tmp_path / "knowledge.db"
    _fill_knowledge(path)
    return path


def _fill_knowledge(path: Path | str) -> None:
    store = KnowledgeStore(path)
    r42 = store.record_review(ReviewRecord(repo="acme/api", pr_number=42))
    r43 = store.record_review(ReviewRecord(repo="acme/api", pr_number=43))
    r7 = store.record_review(ReviewRecord(repo="acme/web", pr_number=7))
    store.record_findings(
        [
            _finding(r42, 1001, "Possible null dereference of user"),
            _finding(r42, 1002, "Unused import of lodash"),
            _finding(r43, 1003, "Avoid global state in handler"),
            _finding(r7, 2001, "Missing key prop in list render"),
        ]
    )
    store.record_feedback_reactions(
        [
            _reaction(store, "acme/api", 1001, 1, "-1", "alice", "2026-01-04T08:00:00Z"),
            _reaction(store, "acme/api", 1001, 2, "-1", "bob", "2026-01-04T09:00:00Z"),
            _reaction(store, "acme/api", 1003, 3, "-1", "erin", "2026-01-09T08:00:00Z"),
            _reaction(store, "acme/web", 2001, 4, "+1", "dave", "2026-01-07T11:00:00Z"),
        ]
    )
    store.record_memory_governance(
        MemoryGovernanceRecord(
            repo="acme/api",
            action="remember",
            actor="carol",
            memory_id=4,
            pr_number=42,
            comment_id=5001,
            comment_url="https://github.com/acme/api/pull/42#issuecomment-5001",
            text="Prefer the repo's Result type over raising",
        )
    )
    store.record_memory_governance(
        MemoryGovernanceRecord(
            repo="acme/api",
            action="forget",
            actor="maint",
            finding_id=1003,
            removed=2,
            pr_number=43,
            comment_id=1010,
            comment_url="https://github.com/acme/api/pull/43#discussion_r1010",
            text="Avoid global state in handler",
        )
    )
    store.close()


def _invoke(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return runner.invoke(app, list(args), env={**CLEAN_ENV, **(env or {})})


def _list(uri: Path, *extra: str, env: dict[str, str | None] | None = None) -> Result:
    return _invoke("memory", "list", "--uri", str(uri), "--provider", "local", *extra, env=env)


def _entries(result: Result) -> list[dict[str, object]]:
    assert result.exit_code == 0, result.output
    entries: list[dict[str, object]] = json.loads(result.stdout)["entries"]
    return entries


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_list_json_groups_outcomes_and_carries_provenance(uri: Path, knowledge: Path) -> None:
    before = _digest(knowledge)
    result = _list(uri, "--knowledge-db", str(knowledge), "--json")
    out = json.loads(result.stdout)
    assert out["knowledge_db"] == str(knowledge) and out["notes"] == [] and out["model"] == LOCAL_MODEL
    entries = _entries(result)
    keys = [(e["repo"], e["status"], e["finding_id"], e["memory_ids"]) for e in entries]
    assert keys == [
        ("acme/api", "live", 1001, [1, 3]),
        ("acme/api", "live", 1002, [2]),
        ("acme/api", "live", None, [4]),
        ("acme/api", "retired", 1003, []),
        ("acme/web", "live", 2001, [5]),
        ("acme/web", "stale", 2002, [6]),
    ]
    grouped = entries[0]
    assert grouped["outcomes"] == ["accepted", "thumbs_down"]
    assert grouped["pr_number"] == 42
    assert grouped["comment_url"] == "https://github.com/acme/api/pull/42#discussion_r1001"
    assert grouped["finding_text"] == "Possible null dereference of user"
    assert grouped["created_at"] == "2026-01-02 10:00:00"
    assert (grouped["thumbs_up"], grouped["thumbs_down"]) == (0, 2)
    assert grouped["added_by"] is None and grouped["retired_by"] is None
    assert [
        (h["kind"], h["at"], h["outcome"], h["memory_id"], h["reaction"], h["actor"])
        for h in grouped["history"]  # type: ignore[attr-defined]
    ] == [
        ("outcome", "2026-01-02 10:00:00", "accepted", 1, None, None),
        ("reaction", "2026-01-04T08:00:00Z", None, None, "-1", "alice"),
        ("reaction", "2026-01-04T09:00:00Z", None, None, "-1", "bob"),
        ("outcome", "2026-01-05 09:00:00", "thumbs_down", 3, None, None),
    ]
    assert _digest(knowledge) == before  # read-only: not migrated, not touched


def test_list_hand_added_and_retired_entries(uri: Path, knowledge: Path) -> None:
    entries = _entries(_list(uri, "--knowledge-db", str(knowledge), "--json"))
    added = entries[2]
    assert (added["added_by"], added["pr_number"], added["outcomes"]) == ("carol", 42, ["accepted"])
    assert added["comment_url"] == "https://github.com/acme/api/pull/42#issuecomment-5001"
    assert added["added_at"] and str(added["added_at"]).endswith("Z")
    assert [h["kind"] for h in added["history"]] == ["outcome", "remembered"]  # type: ignore[attr-defined]
    retired = entries[3]
    assert retired["retired_by"] == "maint" and retired["removed"] == 2
    assert retired["retire_comment_url"] == "https://github.com/acme/api/pull/43#discussion_r1010"
    assert retired["pr_number"] == 43
    assert retired["comment_url"] == "https://github.com/acme/api/pull/43#discussion_r1003"
    assert retired["finding_text"] == "Avoid global state in handler"
    assert retired["thumbs_down"] == 1
    assert [(h["kind"], h["actor"]) for h in retired["history"]] == [  # type: ignore[attr-defined]
        ("reaction", "erin"),
        ("retired", "maint"),
    ]
    web = entries[4]
    assert (web["pr_number"], web["thumbs_up"]) == (7, 1)
    assert web["comment_url"] == "https://github.com/acme/web/pull/7#discussion_r2001"
    assert entries[5]["stale"] is True and entries[5]["pr_number"] is None  # no finding row in the DB


def test_list_repo_filter(uri: Path, knowledge: Path) -> None:
    entries = _entries(_list(uri, "--knowledge-db", str(knowledge), "--repo", "acme/web", "--json"))
    assert [(e["repo"], e["finding_id"]) for e in entries] == [("acme/web", 2001), ("acme/web", 2002)]
    bad = _list(uri, "--knowledge-db", str(knowledge), "--repo", "not a repo")
    assert bad.exit_code == 1 and "Error:" in bad.stderr


def test_list_text_output(uri: Path, knowledge: Path) -> None:
    result = _list(uri, "--knowledge-db", str(knowledge))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"knowledge DB: {knowledge}. 6 entries (4 live, 1 stale, 1 retired)" in out
    assert "memory #1, #3 · acme/api · live · accepted, thumbs_down" in out
    assert "finding 1001 on PR #42  https://github.com/acme/api/pull/42#discussion_r1001" in out
    assert "[major/correctness] src/app.ts: Possible null dereference of user" in out
    assert "created 2026-01-02 10:00:00 · 👍 0 👎 2" in out
    assert "2026-01-04T08:00:00Z  👎 by alice" in out and "2026-01-07T11:00:00Z  👍 by dave" in out
    assert "2026-01-05 09:00:00  memory #3 thumbs_down" in out
    assert (
        "added by carol at " in out
        and "on PR #42  https://github.com/acme/api/pull/42#issuecomment-5001" in out
    )
    assert "memory - · acme/api · retired" in out
    assert "retired by maint at " in out and "(2 row(s) removed)" in out


def test_list_without_knowledge_db_lists_lancedb_with_a_note(
    uri: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the default ./data/kodiai-knowledge.db does not exist here
    result = _list(uri, "--json")
    entries = _entries(result)
    assert [e["memory_ids"] for e in entries] == [[1, 3], [2], [4], [5], [6]]
    assert all(e["pr_number"] is None and e["comment_url"] is None and e["history"] for e in entries)
    assert entries[0]["thumbs_down"] == 0 and entries[2]["added_by"] is None
    note = result.stderr.strip()
    assert note.count("\n") == 0 and "no knowledge DB at" in note and "provenance" in note
    assert json.loads(result.stdout)["knowledge_db"] is None
    assert not (tmp_path / "data").exists()
    text = _list(uri)
    assert text.exit_code == 0 and "knowledge DB: none. 5 entries (4 live, 1 stale)" in text.stdout
    assert "added by hand (no provenance recorded)" in text.stdout


def test_list_missing_explicit_paths_are_errors_and_create_nothing(uri: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "knowledge.db"
    result = _list(uri, "--knowledge-db", str(missing))
    assert result.exit_code == 1
    assert f"no knowledge DB found at {missing} (resolved via --knowledge-db)" in result.stderr
    via_env = _list(uri, env={"KNOWLEDGE_DB_PATH": str(missing)})
    assert via_env.exit_code == 1 and "resolved via KNOWLEDGE_DB_PATH" in via_env.stderr
    no_store = _list(tmp_path / "absent.lance", "--knowledge-db", str(missing))
    assert no_store.exit_code == 1 and "No memory store at" in no_store.stderr
    assert not missing.parent.exists() and not (tmp_path / "absent.lance").exists()


def test_list_env_knowledge_db_and_an_older_file_without_governance(uri: Path, knowledge: Path) -> None:
    conn = sqlite3.connect(knowledge)
    conn.execute("DROP TABLE memory_governance")
    conn.commit()
    conn.close()
    result = _list(uri, "--json", env={"KNOWLEDGE_DB_PATH": str(knowledge)})
    entries = _entries(result)
    assert "lacks memory_governance" in result.stderr and "kodiai db upgrade" in result.stderr
    assert [e["status"] for e in entries] == ["live", "live", "live", "live", "stale"]  # no retired entry
    assert entries[0]["comment_url"] == "https://github.com/acme/api/pull/42#discussion_r1001"
    tables = sqlite3.connect(knowledge).execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    assert "memory_governance" not in {r[0] for r in tables}  # not migrated by a read-only listing


def test_list_retired_only_when_the_table_is_missing(knowledge: Path, tmp_path: Path) -> None:
    """A store directory without this embedder's table: retired findings still come from governance."""
    empty = tmp_path / "empty.lance"
    empty.mkdir()
    result = _list(empty, "--knowledge-db", str(knowledge), "--json")
    entries = _entries(result)
    assert [(e["status"], e["finding_id"], e["memory_ids"]) for e in entries] == [
        ("absent", None, [4]),
        ("retired", 1003, []),
    ]
    assert entries[0]["added_by"] == "carol"
    assert "has no memory table for all-MiniLM-L6-v2" in result.stderr
    assert list(empty.iterdir()) == []


def test_stats_outcomes_per_repo_and_retired_counts(uri: Path, knowledge: Path) -> None:
    result = _invoke(
        "memory",
        "stats",
        "--uri",
        str(uri),
        "--provider",
        "local",
        "--knowledge-db",
        str(knowledge),
        "--json",
    )
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert (stats["total"], stats["stale"]) == (6, 1)
    assert stats["by_repo"] == {"acme/api": 4, "acme/web": 2}
    assert stats["by_repo_outcome"] == {
        "acme/api": {"accepted": 2, "suppressed": 1, "thumbs_down": 1},
        "acme/web": {"thumbs_up": 1},
    }
    assert stats["retired_by_repo"] == {"acme/api": 1}
    assert stats["knowledge_db"] == str(knowledge)
    text = _invoke(
        "memory", "stats", "--uri", str(uri), "--provider", "local", "--knowledge-db", str(knowledge)
    ).stdout
    assert "│ acme/api │        4 │        2 │          1 │         0 │           1 │       1 │" in text
    assert "│ acme/web │        2 │        0 │          0 │         1 │           0 │       0 │" in text


def test_stats_without_knowledge_db(uri: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _invoke("memory", "stats", "--uri", str(uri), "--provider", "local", "--json")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["retired_by_repo"] is None and stats["knowledge_db"] is None
    assert stats["by_repo_outcome"]["acme/api"]["accepted"] == 2
    text = _invoke("memory", "stats", "--uri", str(uri), "--provider", "local").stdout
    assert "│ acme/api │        4 │        2 │          1 │         0 │           1 │       - │" in text
    missing = _invoke(
        "memory", "stats", "--uri", str(uri), "--provider", "local", "--knowledge-db", str(tmp_path / "x.db")
    )
    assert missing.exit_code == 1 and "no knowledge DB found at" in missing.stderr
    assert not (tmp_path / "x.db").exists()


def test_list_forget_of_a_finding_that_still_has_rows_stays_live_with_who_retired_it(
    uri: Path, knowledge: Path
) -> None:
    """A forget recorded while rows remain (e.g. the memory was written again, or lives in this table while
    the server used another) keeps the entry live, with the retirement in its provenance and history."""
    store = KnowledgeStore(knowledge)
    store.record_memory_governance(
        MemoryGovernanceRecord(repo="acme/api", action="forget", actor="maint2", finding_id=1002, removed=0)
    )
    # a `remember` row of another repo whose memory id collides with #4 does not claim it
    store.record_memory_governance(
        MemoryGovernanceRecord(repo="acme/web", action="remember", actor="zed", memory_id=4, text="web rule")
    )
    store.close()
    entries = _entries(_list(uri, "--knowledge-db", str(knowledge), "--json"))
    second = entries[1]
    assert (second["finding_id"], second["status"], second["retired_by"], second["removed"]) == (
        1002,
        "live",
        "maint2",
        0,
    )
    assert [h["kind"] for h in second["history"]] == ["outcome", "retired"]  # type: ignore[attr-defined]
    assert entries[2]["added_by"] == "carol"
    absent = [e for e in entries if e["status"] == "absent"]
    assert [(e["repo"], e["added_by"], e["finding_text"]) for e in absent] == [
        ("acme/web", "zed", "web rule")
    ]


def test_list_and_forget_use_the_knowledge_tables_of_database_url(
    uri: Path, knowledge: Path, postgres_url: str
) -> None:
    """With DATABASE_URL (and no --knowledge-db) the listing reads the knowledge tables in PostgreSQL, where
    the server keeps them, and shows what it shows from the file; a CLI forget is logged there."""
    _fill_knowledge(postgres_url)
    on_file = json.loads(_list(uri, "--knowledge-db", str(knowledge), "--json").stdout)
    result = _list(uri, "--json", env={"DATABASE_URL": postgres_url})
    assert result.exit_code == 0, result.output
    on_postgres = json.loads(result.stdout)
    assert on_postgres["knowledge_db"] == "postgresql://127.0.0.1:" + postgres_url.split(":")[-1]
    assert _without_times(on_postgres["entries"]) == _without_times(on_file["entries"])
    assert on_postgres["notes"] == [] and len(on_postgres["entries"]) == 6
    retire = _invoke(
        "memory", "retire", "--uri", str(uri), "--provider", "local", "--repo", "acme/api", "--finding", "1002",
        "--actor", "ops", env={"DATABASE_URL": postgres_url},
    )  # fmt: skip
    assert retire.exit_code == 0, retire.output
    store = KnowledgeStore(postgres_url)
    try:
        logged = [
            (g.action, g.actor) for g in store.list_memory_governance("acme/api") if g.finding_id == 1002
        ]
    finally:
        store.close()
    assert logged == [("forget", "cli:ops")]


def _without_times(value: object) -> object:
    """The rows were written a moment apart: compare everything but when (``*_at``, a history's ``at``)."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if not (k == "at" or k.endswith("_at"))}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value
