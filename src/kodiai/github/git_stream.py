"""Reading a git child's output in bounded memory: chunks to a consumer, a byte cap, kill and reap.

``communicate()`` holds a command's whole stdout (and its decoded copy) in the server: a pull request
that adds one 96 MB file made ``git diff`` cost 471 MB of RSS. Here stdout is read in chunks and handed
to a consumer that keeps only what it needs; once ``max_bytes`` have been read, or the consumer says it
has enough, the child is killed and reaped, so neither memory nor time depends on what a pull request
contains. stderr is drained concurrently (a child blocked on a full stderr pipe would never exit) and
only its tail is kept for the error message.

The child's environment is :func:`kodiai.github.git_env.git_child_env`: the allow-list, never the
server's secrets. Diff and listing commands need no network, so callers pass no token unless they fetch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kodiai.github.git_env import git_child_env

__all__ = [
    "CHUNK_BYTES",
    "SIDE_TASK_GRACE_SECONDS",
    "STDERR_TAIL_BYTES",
    "Consumer",
    "GitStreamError",
    "StreamOutcome",
    "stream_git",
]

CHUNK_BYTES = 256 * 1024
STDERR_TAIL_BYTES = 4096
SIDE_TASK_GRACE_SECONDS = 5.0

#: Returns False when it has read enough (the child is then killed).
Consumer = Callable[[bytes], bool]


class GitStreamError(RuntimeError):
    """git could not start or exited non-zero before the reader stopped it (message not yet redacted)."""


@dataclass(frozen=True)
class StreamOutcome:
    bytes_read: int
    """Bytes handed to the consumer (at most ``max_bytes``)."""
    stopped: bool
    """The reader stopped before the end of the output (cap reached or the consumer had enough); the
    child was killed and reaped."""
    returncode: int | None


class _Tail:
    """The last ``limit`` bytes written (stderr for the error message)."""

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        self.limit = limit
        self.data = b""

    def add(self, chunk: bytes) -> None:
        self.data = (self.data + chunk)[-self.limit :]


async def _drain(stream: asyncio.StreamReader | None, tail: _Tail) -> None:
    if stream is None:
        return
    while chunk := await stream.read(CHUNK_BYTES):
        tail.add(chunk)


async def _feed(stdin: asyncio.StreamWriter | None, data: bytes | None) -> None:
    if stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if data:
            stdin.write(data)
            await stdin.drain()
        stdin.close()


async def _discard(stream: asyncio.StreamReader) -> None:
    while await stream.read(CHUNK_BYTES):
        pass


def close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close the child's pipe transports once it is reaped. asyncio closes them itself only when every
    pipe has reached its end; a grandchild still holding stderr (or a reader that stopped early) leaves
    them open until garbage collection, which then warns (``unclosed transport``). ``Process`` has no
    public close, so its transport's is called."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


async def _kill_and_reap(proc: asyncio.subprocess.Process) -> None:
    """Kill, read stdout to its end, then wait. asyncio's ``wait()`` resolves only once every pipe has
    closed, and a stdout paused with unread data in its buffer would never see its end."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    if proc.stdout is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(_discard(proc.stdout), SIDE_TASK_GRACE_SECONDS)
    await proc.wait()


async def stream_git(
    args: Sequence[str],
    consume: Consumer,
    *,
    cwd: Path,
    max_bytes: int,
    extra_env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    git_binary: str = "git",
    chunk_bytes: int = CHUNK_BYTES,
) -> StreamOutcome:
    """Run ``git <args>`` in ``cwd`` and hand its stdout to ``consume`` chunk by chunk (never more than
    ``max_bytes`` in total). Raises :class:`GitStreamError` when git fails on its own; a child stopped by
    the reader is not a failure. The child never outlives the call (cancellation included)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            git_binary,
            *args,
            cwd=str(cwd),
            env=git_child_env(extra_env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise GitStreamError(f"git could not start: {exc}") from None
    tail = _Tail()
    side = [asyncio.ensure_future(_drain(proc.stderr, tail)), asyncio.ensure_future(_feed(proc.stdin, stdin))]
    read = 0
    stopped = False
    try:
        assert proc.stdout is not None
        while True:
            chunk = await proc.stdout.read(min(chunk_bytes, max_bytes - read) if read < max_bytes else 1)
            if not chunk:
                break
            if read >= max_bytes:
                stopped = True  # there is more than the cap allows
                break
            read += len(chunk)
            if not consume(chunk):
                stopped = True
                break
        if stopped:
            await _kill_and_reap(proc)
        else:
            await proc.wait()
        # a grandchild still holding stderr open must not hold the caller: wait briefly, then let go
        await asyncio.wait(side, timeout=SIDE_TASK_GRACE_SECONDS)
    finally:
        if proc.returncode is None:
            await asyncio.shield(_kill_and_reap(proc))
        for task in side:
            task.cancel()
        close_pipes(proc)
    if not stopped and proc.returncode != 0:
        detail = tail.data.decode("utf-8", "replace").strip()
        shown = " ".join(args[:2])
        raise GitStreamError(f"git {shown} failed (exit {proc.returncode}): {detail}")
    return StreamOutcome(bytes_read=read, stopped=stopped, returncode=proc.returncode)
