"""``stream_git``: a git child's stdout in chunks, a byte cap, and a child that never outlives the call.

Real git in real repositories; the cancellation test runs ``sleep`` through the same code path (the
``git_binary`` parameter) because no git command waits on its own.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from kodiai.github.git_stream import GitStreamError, stream_git
from kodiai.github.workspace import GitCommandError, Workspace
from support.gitrepo import git

MIB = 1024 * 1024


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    (work / "big.txt").write_bytes(b"0123456789abcdef\n" * (4 * MIB // 17))
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "big", cwd=work)
    return work


def children(name: str) -> list[int]:
    """Live (or zombie) child processes of this process running ``name``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == os.getpid() and comm == name:
            found.append(int(entry.name))
    return found


async def test_whole_output_when_under_the_cap(repo: Path) -> None:
    chunks: list[bytes] = []
    outcome = await stream_git(
        ["show", "HEAD:big.txt"], lambda c: chunks.append(c) is None, cwd=repo, max_bytes=8 * MIB
    )
    data = b"".join(chunks)
    assert data == (repo / "big.txt").read_bytes()
    assert (outcome.stopped, outcome.returncode, outcome.bytes_read) == (False, 0, len(data))
    assert max(len(c) for c in chunks) <= 256 * 1024  # read in chunks, never whole


async def test_cap_stops_reading_and_reaps_the_child(repo: Path) -> None:
    seen = bytearray()
    outcome = await stream_git(
        ["show", "HEAD:big.txt"], lambda c: seen.extend(c) is None, cwd=repo, max_bytes=100_000
    )
    assert outcome.stopped and outcome.bytes_read == len(seen) == 100_000
    assert outcome.returncode is not None  # reaped (killed: a negative signal number, or git's own exit)
    assert children("git") == []


async def test_consumer_can_stop_early(repo: Path) -> None:
    calls = 0

    def first_only(chunk: bytes) -> bool:
        nonlocal calls
        calls += 1
        return False

    outcome = await stream_git(["show", "HEAD:big.txt"], first_only, cwd=repo, max_bytes=64 * MIB)
    assert outcome.stopped and calls == 1 and outcome.returncode is not None
    assert children("git") == []


async def test_exact_cap_is_not_a_stop(repo: Path) -> None:
    size = (repo / "big.txt").stat().st_size
    outcome = await stream_git(["show", "HEAD:big.txt"], lambda c: True, cwd=repo, max_bytes=size)
    assert (outcome.stopped, outcome.bytes_read, outcome.returncode) == (False, size, 0)


async def test_failure_raises_with_stderr_and_workspace_redacts(repo: Path) -> None:
    with pytest.raises(GitStreamError, match=r"git show HEAD:nope failed \(exit 128\): fatal: path .nope."):
        await stream_git(["show", "HEAD:nope"], lambda c: True, cwd=repo, max_bytes=MIB)
    token = "ghs_" + "s3cr3t" * 6
    ws = Workspace(repo, base_url="https://github.com", token=token)
    with pytest.raises(GitCommandError) as caught:
        await ws.git_stream(["show", f"HEAD:{token}"], lambda c: True, max_bytes=MIB)
    assert token not in str(caught.value) and "[REDACTED]" in str(caught.value)


async def test_stdin_is_fed(repo: Path) -> None:
    blob = git("rev-parse", "HEAD:big.txt", cwd=repo)
    out = bytearray()
    await stream_git(
        ["cat-file", "--batch-check=%(objectname) %(objectsize)"],
        lambda c: out.extend(c) is None,
        cwd=repo,
        max_bytes=MIB,
        stdin=f"{blob}\n{'0' * 40}\n".encode(),
    )
    size = (repo / "big.txt").stat().st_size
    assert out.decode().splitlines() == [f"{blob} {size}", f"{'0' * 40} missing"]


async def test_cancellation_kills_and_reaps_the_child(tmp_path: Path) -> None:
    task = asyncio.ensure_future(
        stream_git(["30"], lambda c: True, cwd=tmp_path, max_bytes=MIB, git_binary="sleep")
    )
    for _ in range(100):
        await asyncio.sleep(0.02)
        if children("sleep"):
            break
    assert children("sleep"), "the child never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert children("sleep") == []


async def test_kill_and_reap_returns_with_a_paused_unread_stdout(repo: Path) -> None:
    """A child killed while its stdout buffer is full (reading paused) is still reaped: asyncio's wait()
    needs the pipe's end, which a paused reader never sees unless it is drained."""
    from kodiai.github.git_stream import _kill_and_reap

    proc = await asyncio.create_subprocess_exec(
        "git", "show", "HEAD:big.txt", cwd=repo, stdout=asyncio.subprocess.PIPE
    )
    await asyncio.sleep(0.5)  # 4 MiB waiting: the reader buffers 128 KiB, then pauses
    await asyncio.wait_for(_kill_and_reap(proc), 10)
    assert proc.returncode is not None and children("git") == []
