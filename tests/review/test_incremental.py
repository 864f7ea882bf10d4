"""R4.18 incremental-diff helpers (ID-01…04) plus the R2.17 paths, with real git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kodiai.github.git_env import harden_args, protocols_for, workspace_git_env
from kodiai.review.incremental import (
    GitResult,
    IncrementalDiffResult,
    compute_incremental_diff,
    parse_name_only,
    select_review_files,
)
from support.gitrepo import commit_files, git


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    work = tmp_path / "work"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    shas = [commit_files(work, {"a.txt": "1", "b.txt": "1"}, "one")]
    shas.append(commit_files(work, {"b.txt": "2", "c/d.txt": "2"}, "two"))
    shas.append(commit_files(work, {"e.txt": "3"}, "three"))
    return work, shas


class lookup:
    """A last-reviewed-SHA lookup that records its calls."""

    def __init__(self, sha: str | None) -> None:
        self.sha = sha
        self.calls: list[tuple[str, int]] = []

    def __call__(self, repo: str, pr: int) -> str | None:
        self.calls.append((repo, pr))
        return self.sha


def test_id_01_no_previous_sha_is_full(tmp_path: Path) -> None:
    result = compute_incremental_diff(
        workspace_dir=str(tmp_path), repo="acme/repo", pr_number=1, get_last_reviewed_head_sha=lookup(None)
    )
    assert result == IncrementalDiffResult(
        mode="full", changed_files_since_last_review=[], last_reviewed_head_sha=None, reason="no-prior-review"
    )


def test_id_02_result_fields(tmp_path: Path) -> None:
    result = compute_incremental_diff(
        workspace_dir=str(tmp_path), repo="acme/repo", pr_number=1, get_last_reviewed_head_sha=lookup(None)
    )
    assert set(result.model_dump()) == {
        "mode",
        "changed_files_since_last_review",
        "last_reviewed_head_sha",
        "reason",
    }


def test_id_03_previous_sha_with_missing_workspace(tmp_path: Path) -> None:
    sha = "a" * 40
    result = compute_incremental_diff(
        workspace_dir=str(tmp_path / "missing"),
        repo="acme/repo",
        pr_number=1,
        get_last_reviewed_head_sha=lookup(sha),
    )
    assert result.mode == "full"
    assert result.reason in {"prior-sha-unreachable", "unexpected-error"}
    assert result.changed_files_since_last_review == []


def test_id_04_lookup_that_throws(tmp_path: Path) -> None:
    def boom(repo: str, pr: int) -> str | None:
        raise RuntimeError("db locked")

    result = compute_incremental_diff(
        workspace_dir=str(tmp_path), repo="acme/repo", pr_number=1, get_last_reviewed_head_sha=boom
    )
    assert (
        result.mode,
        result.reason,
        result.changed_files_since_last_review,
        result.last_reviewed_head_sha,
    ) == (
        "full",
        "unexpected-error",
        [],
        None,
    )


def test_incremental_success_lists_changed_files(repo: tuple[Path, list[str]]) -> None:
    work, shas = repo
    get = lookup(shas[0])
    result = compute_incremental_diff(
        workspace_dir=str(work), repo="acme/repo", pr_number=7, get_last_reviewed_head_sha=get
    )
    assert result.mode == "incremental"
    assert result.changed_files_since_last_review == ["b.txt", "c/d.txt", "e.txt"]
    assert result.last_reviewed_head_sha == shas[0]
    assert result.reason == f"incremental-from-{shas[0][:7]}"
    assert get.calls == [("acme/repo", 7)]


def test_unknown_sha_is_unreachable_after_deepen(repo: tuple[Path, list[str]]) -> None:
    work, _ = repo
    result = compute_incremental_diff(
        workspace_dir=str(work), repo="r", pr_number=1, get_last_reviewed_head_sha=lookup("f" * 40)
    )
    assert (result.mode, result.reason, result.last_reviewed_head_sha) == (
        "full",
        "prior-sha-unreachable",
        "f" * 40,
    )


def test_shallow_clone_deepens_to_reach_prior_sha(repo: tuple[Path, list[str]], tmp_path: Path) -> None:
    """R2.17: a SHA outside the shallow clone is fetched with ``--deepen`` before giving up."""
    work, shas = repo
    clone = tmp_path / "clone"
    git("clone", "-q", "--depth=1", f"file://{work}", str(clone), cwd=tmp_path)
    assert subprocess.run(["git", "cat-file", "-t", shas[0]], cwd=clone, capture_output=True).returncode != 0

    def local_remote_git(args: list[str], cwd: str) -> GitResult:
        """The hardened git a workspace cloned from a local path gets: ``file`` is then an allowed
        protocol (the server's own runner allows only HTTP(S) for GitHub)."""
        env = workspace_git_env(cwd, protocols=protocols_for(f"file://{work}"))
        done = subprocess.run(["git", *harden_args(args)], cwd=cwd, env=env, capture_output=True, text=True)
        return GitResult(returncode=done.returncode, stdout=done.stdout)

    result = compute_incremental_diff(
        workspace_dir=str(clone),
        repo="r",
        pr_number=1,
        get_last_reviewed_head_sha=lookup(shas[0]),
        git=local_remote_git,
    )
    assert result.mode == "incremental"
    assert result.changed_files_since_last_review == ["b.txt", "c/d.txt", "e.txt"]


def test_diff_failure_is_full(repo: tuple[Path, list[str]]) -> None:
    work, _ = repo
    blob = git("rev-parse", "HEAD:a.txt", cwd=work)  # an object that exists but is not a commit
    result = compute_incremental_diff(
        workspace_dir=str(work), repo="r", pr_number=1, get_last_reviewed_head_sha=lookup(blob)
    )
    assert (result.mode, result.reason, result.last_reviewed_head_sha) == (
        "full",
        "diff-computation-failed",
        blob,
    )


def test_parse_name_only_and_review_file_selection() -> None:
    assert parse_name_only("a.ts\n\n b.ts \n") == ["a.ts", "b.ts"]
    inc = IncrementalDiffResult(
        mode="incremental", changed_files_since_last_review=["c", "a"], last_reviewed_head_sha="s", reason="r"
    )
    assert select_review_files(["a", "b", "c"], inc) == ["a", "c"]
    empty = inc.model_copy(update={"changed_files_since_last_review": []})
    assert select_review_files(["a", "b"], empty) == ["a", "b"]
    full = inc.model_copy(update={"mode": "full"})
    assert select_review_files(["a", "b"], full) == ["a", "b"]
    assert select_review_files(["a"], None) == ["a"]


def test_with_real_knowledge_store_and_q2_fix_order(repo: tuple[Path, list[str]], tmp_path: Path) -> None:
    """PARITY Q2 fix: the last completed run is read before claiming the new one, and a later claim
    (which supersedes it) does not hide it either: the original got ``no-prior-review`` after its claim."""
    from kodiai.storage.knowledge import KnowledgeStore

    work, shas = repo
    store = KnowledgeStore(tmp_path / "knowledge.db")
    try:
        first = store.check_and_claim_run(
            repo="acme/repo",
            pr_number=3,
            base_sha="base",
            head_sha=shas[0],
            delivery_id="d1",
            action="opened",
        )
        store.complete_run(first.run_key)
        before_claim = compute_incremental_diff(
            workspace_dir=str(work),
            repo="acme/repo",
            pr_number=3,
            get_last_reviewed_head_sha=store.get_last_reviewed_head_sha,
        )
        assert before_claim.mode == "incremental"
        assert before_claim.changed_files_since_last_review == ["b.txt", "c/d.txt", "e.txt"]
        store.check_and_claim_run(
            repo="acme/repo",
            pr_number=3,
            base_sha="base",
            head_sha=shas[2],
            delivery_id="d2",
            action="synchronize",
        )
        after_claim = compute_incremental_diff(
            workspace_dir=str(work),
            repo="acme/repo",
            pr_number=3,
            get_last_reviewed_head_sha=store.get_last_reviewed_head_sha,
        )
        assert (after_claim.mode, after_claim.last_reviewed_head_sha) == ("incremental", shas[0])
    finally:
        store.close()
