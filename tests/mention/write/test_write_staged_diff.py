"""The write policy on a real git repository: staged paths and ``git diff --cached`` read through a Workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from kodiai.github.workspace import GitCommandError, Workspace
from kodiai.mention.write.messages import build_commit_message, is_branch_conflict_error
from kodiai.mention.write.policy import WritePolicy, WritePolicyError
from kodiai.mention.write.staged import (
    commit_and_push,
    enforce_write_policy,
    read_staged_changes,
    stage_all,
)
from support.gitrepo import BareRepo, git

PAT = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"
AWS = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture
def remote(tmp_path: Path) -> BareRepo:
    repo = BareRepo(tmp_path / "remote", "acme", "app")
    repo.commit({"config.txt": f"name = demo\ntoken = {PAT}\n", "src/app.py": "print('hi')\n"}, "initial")
    return repo


@pytest.fixture
def ws(tmp_path: Path, remote: BareRepo) -> Workspace:
    directory = tmp_path / "ws"
    git("clone", "-q", str(remote.path), str(directory), cwd=tmp_path)
    git("config", "user.name", "kodiai[bot]", cwd=directory)
    git("config", "user.email", "kodiai[bot]@users.noreply.github.com", cwd=directory)
    # the "GitHub" is a local directory: its base URL lets the workspace's git use the file protocol
    return Workspace(directory, base_url=remote.root.as_uri(), token="")


def write(ws: Workspace, rel: str, text: str) -> None:
    target = ws.dir / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


async def test_removing_a_committed_secret_passes_and_an_added_one_is_refused(ws: Workspace) -> None:
    write(ws, "config.txt", "name = demo\ntoken = from-env\n")
    write(ws, "src/new.py", "x = 1\n")
    await stage_all(ws)
    changes = await enforce_write_policy(ws, WritePolicy())
    assert changes.paths == ("config.txt", "src/new.py")
    assert changes.added_lines_by_path == {"config.txt": ["token = from-env"], "src/new.py": ["x = 1"]}

    write(ws, "src/new.py", f"x = 1\nKEY = '{AWS}'\n")
    await stage_all(ws)
    with pytest.raises(WritePolicyError) as info:
        await enforce_write_policy(ws, WritePolicy())
    assert info.value.code == "write-policy-secret-detected"
    assert (info.value.path, info.value.detector) == ("src/new.py", "regex:aws-access-key")


async def test_deleted_and_renamed_paths_are_staged_paths(ws: Workspace) -> None:
    git("mv", "src/app.py", "src/main.py", cwd=ws.dir)
    (ws.dir / "config.txt").unlink()
    await stage_all(ws)
    changes = await read_staged_changes(ws)
    assert set(changes.paths) == {"config.txt", "src/main.py"}
    assert changes.added_lines_by_path["config.txt"] == []  # a deletion adds nothing
    with pytest.raises(WritePolicyError) as info:
        await enforce_write_policy(ws, WritePolicy(allow_paths=("src/",)))
    assert (info.value.code, info.value.path) == ("write-policy-not-allowed", "config.txt")


async def test_denied_default_paths_from_git(ws: Workspace) -> None:
    write(ws, ".github/workflows/ci.yml", "on: push\n")
    await stage_all(ws)
    with pytest.raises(WritePolicyError) as info:
        await enforce_write_policy(ws, WritePolicy())
    assert (info.value.code, info.value.path, info.value.pattern) == (
        "write-policy-denied-path",
        ".github/workflows/ci.yml",
        ".github/",
    )


async def test_unusual_file_names_are_scanned(ws: Workspace) -> None:
    name = "docs/naïve notes\t1.txt"
    write(ws, name, f"{PAT}\n")
    await stage_all(ws)
    with pytest.raises(WritePolicyError) as info:
        await enforce_write_policy(ws, WritePolicy())
    assert info.value.path == name
    assert info.value.detector == "regex:github-pat"


async def test_nothing_staged(ws: Workspace) -> None:
    await stage_all(ws)
    with pytest.raises(WritePolicyError) as info:
        await enforce_write_policy(ws, WritePolicy())
    assert info.value.code == "write-policy-no-changes"


async def test_commit_and_push_a_new_branch_then_a_conflicting_push(
    ws: Workspace, remote: BareRepo, tmp_path: Path
) -> None:
    write(ws, "src/app.py", "print('changed')\n")
    message = build_commit_message(pr_number=3, write_key="k1", delivery_id="d1")
    pushed = await commit_and_push(
        ws,
        remote_ref="kodiai/apply/pr-3",
        new_branch="kodiai/apply/pr-3",
        message=message,
        policy=WritePolicy(),
    )
    assert pushed.paths == ("src/app.py",)
    assert git("rev-parse", "refs/heads/kodiai/apply/pr-3", cwd=remote.path) == pushed.head_sha
    assert "kodiai-write-output-key: k1" in git("log", "-1", "--format=%B", pushed.head_sha, cwd=remote.path)

    # a second workspace makes a different commit for the same branch: the push is rejected
    other_dir = tmp_path / "ws2"
    git("clone", "-q", str(remote.path), str(other_dir), cwd=tmp_path)
    git("config", "user.name", "kodiai[bot]", cwd=other_dir)
    git("config", "user.email", "bot@example.com", cwd=other_dir)
    other = Workspace(other_dir, base_url=remote.root.as_uri(), token="")
    write(other, "src/app.py", "print('other')\n")
    with pytest.raises(GitCommandError) as info:
        await commit_and_push(
            other,
            remote_ref="kodiai/apply/pr-3",
            new_branch="kodiai/apply/pr-3",
            message="m",
            policy=WritePolicy(),
        )
    assert is_branch_conflict_error(info.value)


async def test_policy_refusal_commits_nothing(ws: Workspace) -> None:
    before = git("rev-parse", "HEAD", cwd=ws.dir)
    write(ws, ".env", "A=1\n")
    with pytest.raises(WritePolicyError):
        await commit_and_push(ws, remote_ref="main", message="m", policy=WritePolicy())
    assert git("rev-parse", "HEAD", cwd=ws.dir) == before
