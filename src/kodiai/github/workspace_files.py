"""Read files from an untrusted checkout (a pull request's workspace) without trusting the tree.

A pull request controls every entry of the checkout: ``.kodiai.yml`` can be a symbolic link to
``/dev/zero`` (a plain read never ends) or to a file outside the workspace (a host file read and echoed
in an error), a FIFO (a plain ``open`` blocks until a writer appears), or gigabytes long. So a file is
opened one path component at a time below the workspace root with ``O_NOFOLLOW`` (a symbolic link
anywhere in the path is refused, not resolved), must be a regular file by ``fstat`` of the very
descriptor that is read, must fit the caller's byte limit by ``fstat`` *before* reading, and at most
``limit + 1`` bytes are read (a file growing meanwhile is still caught).

The workspace root itself is trusted (the app created it, or the operator named it).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

__all__ = ["WorkspaceFileError", "read_regular_file", "read_workspace_file"]

_READ_CHUNK = 64 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused right after, by fstat).
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class WorkspaceFileError(OSError):
    """A repository file that is refused (not a regular file, a symbolic link, too large, unreadable).

    ``reason`` is a short sentence naming the file by its repository path, never a host path, so it can
    be shown on a pull request.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def _refuse_kind(path: str, mode: int) -> WorkspaceFileError:
    kind = _kind(mode)
    what = kind if kind == "not a regular file" else f"{kind}, not a regular file"
    return WorkspaceFileError(path, f"is {what}; only regular files are read from the repository")


def _read_bounded(fd: int, path: str, max_bytes: int) -> bytes:
    """``fstat`` the open descriptor (regular file within ``max_bytes``), then read at most limit+1 bytes."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise _refuse_kind(path, info.st_mode)
    if info.st_size > max_bytes:
        raise WorkspaceFileError(path, f"is {info.st_size} bytes, larger than the {max_bytes}-byte limit")
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(_READ_CHUNK, max_bytes + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            raise WorkspaceFileError(path, f"is larger than the {max_bytes}-byte limit")


def _parts(relative: str | PurePosixPath) -> tuple[str, ...]:
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or any(p in ("..", ".") for p in parts):
        raise ValueError(f"not a plain relative repository path: {str(relative)!r}")
    return parts


def read_workspace_file(root: str | Path, relative: str | PurePosixPath, *, max_bytes: int) -> bytes | None:
    """The bytes of ``<root>/<relative>``, or ``None`` when it does not exist.

    Raises :class:`WorkspaceFileError` when any component of ``relative`` is a symbolic link, the file is
    not a regular file, or it is larger than ``max_bytes``; other I/O errors propagate as ``OSError``.
    """
    parts = _parts(relative)
    shown = "/".join(parts)
    try:
        dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            where = "/".join(parts[: index + 1])
            try:
                mode = os.lstat(part, dir_fd=dir_fd).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return None
            if stat.S_ISLNK(mode):
                raise _refuse_kind(where, mode)
            if not last:
                if not stat.S_ISDIR(mode):
                    return None  # ``a/b`` where ``a`` is a file: there is no such path
                fd = _open_at(part, _DIR_FLAGS, dir_fd, where)
                os.close(dir_fd)
                dir_fd = fd
                continue
            if not stat.S_ISREG(mode):  # refuse before opening: a FIFO or device is never opened
                raise _refuse_kind(where, mode)
            fd = _open_at(part, _FILE_FLAGS, dir_fd, where)
            try:
                return _read_bounded(fd, shown, max_bytes)
            finally:
                os.close(fd)
        return None  # pragma: no cover - the loop always returns on its last part
    finally:
        os.close(dir_fd)


def _open_at(name: str, flags: int, dir_fd: int, where: str) -> int:
    """``openat`` one component; a symbolic link swapped in after the ``lstat`` is still refused."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise WorkspaceFileError(where, "changed while being read (now a symbolic link?)") from None
        raise


def read_regular_file(path: str | Path, *, max_bytes: int) -> bytes:
    """The bytes of a file an operator named (symbolic links followed), refused unless it is a regular
    file within ``max_bytes``: ``kodiai config validate /dev/zero`` or a FIFO ends at once."""
    shown = str(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        return _read_bounded(fd, shown, max_bytes)
    finally:
        os.close(fd)
