"""Issue 15 item 5: `.kodiai.yml` (and any repository file) is read with `O_NOFOLLOW`, `fstat` checks and a
byte cap, so a hostile pull request cannot make the loader hang, fill memory or read a host file.

The hostile cases that would hang or eat memory without the fix (a symbolic link to `/dev/zero`, a FIFO, a
4 GiB sparse file) run in a child process under an address-space limit and a timeout, so a regression
fails the test instead of taking the machine down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app as cli_app
from kodiai.config import RepoConfigError, load_repo_config
from kodiai.config.loader import MAX_CONFIG_BYTES
from kodiai.github.workspace_files import WorkspaceFileError, read_regular_file, read_workspace_file

CHILD = r"""
import json, resource, sys, time
from kodiai.config import RepoConfigError, load_repo_config

def vm_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1])
    return 0

limit = (vm_kib() + 768 * 1024) * 1024  # whatever is mapped now, plus 768 MiB
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.monotonic()
try:
    result = load_repo_config(sys.argv[1])
    out = {"outcome": "loaded", "model": result.config.model}
except RepoConfigError as exc:
    out = {"outcome": "RepoConfigError", "message": str(exc)}
except BaseException as exc:
    out = {"outcome": type(exc).__name__, "message": str(exc)[:300]}
out["seconds"] = time.monotonic() - started
out["rss_growth_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
print(json.dumps(out))
"""


def load_in_child(workspace: Path) -> dict[str, object]:
    """``load_repo_config(workspace)`` in a child with a memory cap; a hang fails after 60 s."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(workspace)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("loading .kodiai.yml did not finish within 60 s (it hangs)")
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _sparse_4gib(path: Path) -> None:
    with path.open("wb") as fh:  # sparse: no disk space used
        fh.truncate(4 * 1024**3)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (_dev_zero, "is a symbolic link, not a regular file"),
        (_fifo, "is a FIFO, not a regular file"),
        (_sparse_4gib, f"is 4294967296 bytes, larger than the {MAX_CONFIG_BYTES}-byte limit"),
    ],
    ids=["symlink-to-dev-zero", "fifo", "sparse-4GiB"],
)
def test_hostile_config_is_refused_at_once_with_bounded_memory(
    tmp_path: Path, make: object, expected: str
) -> None:
    """A clear config error (the job's `config_error` comment) in milliseconds, nothing read."""
    make(tmp_path / ".kodiai.yml")  # type: ignore[operator]
    out = load_in_child(tmp_path)
    assert out["outcome"] == "RepoConfigError", out
    message = str(out["message"])
    assert message.startswith("Invalid .kodiai.yml: the file ") and expected in message
    assert str(tmp_path) not in message  # repository path only, no host path on a PR comment
    assert float(out["seconds"]) < 2.0  # type: ignore[arg-type]
    assert int(out["rss_growth_kib"]) < 16 * 1024  # type: ignore[call-overload]


def test_symlink_to_a_file_outside_the_workspace_is_not_read(tmp_path: Path) -> None:
    """`.kodiai.yml -> /elsewhere/secret.yml` must not load the host file (nor echo it in an error)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yml").write_text("model: host-secret-model\n", encoding="utf-8")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".kodiai.yml").symlink_to(outside / "secret.yml")
    with pytest.raises(RepoConfigError, match="symbolic link") as err:
        load_repo_config(ws)
    assert "host-secret-model" not in str(err.value)


def test_a_symlink_anywhere_in_the_path_is_refused(tmp_path: Path) -> None:
    """`docs -> /outside`, then `docs/x.yml`: the intermediate link is refused by its repository path."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.yml").write_text("secret\n", encoding="utf-8")
    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    (ws / "real" / "x.yml").write_text("fine\n", encoding="utf-8")
    (ws / "docs").symlink_to(outside)
    with pytest.raises(WorkspaceFileError) as err:
        read_workspace_file(ws, "docs/x.yml", max_bytes=1024)
    assert err.value.path == "docs" and "symbolic link" in err.value.reason
    assert read_workspace_file(ws, "real/x.yml", max_bytes=1024) == b"fine\n"
    assert read_workspace_file(ws, "real/absent.yml", max_bytes=1024) is None
    assert read_workspace_file(ws, "real/x.yml/below", max_bytes=1024) is None
    for bad in ("../outside/x.yml", "/etc/passwd", "real/../docs/x.yml", ""):
        with pytest.raises(ValueError):
            read_workspace_file(ws, bad, max_bytes=1024)


def test_size_limit_is_exact_and_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 100)
    assert read_workspace_file(tmp_path, "a", max_bytes=100) == b"x" * 100
    with pytest.raises(WorkspaceFileError, match="is 100 bytes, larger than the 99-byte limit"):
        read_workspace_file(tmp_path, "a", max_bytes=99)
    (tmp_path / ".kodiai.yml").mkdir()
    with pytest.raises(RepoConfigError, match="is a directory"):
        load_repo_config(tmp_path)


def test_legit_config_absent_config_and_missing_workspace(tmp_path: Path) -> None:
    """What must keep working: a regular file loads, no file (or no workspace) means defaults."""
    assert load_repo_config(tmp_path).config.model == load_repo_config(tmp_path / "absent").config.model
    (tmp_path / ".kodiai.yml").write_text("model: claude-opus-4-1\n", encoding="utf-8")
    assert load_repo_config(tmp_path).config.model == "claude-opus-4-1"


def test_cli_validate_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    """`kodiai config validate <fifo>` (an explicitly named file) exits 1 with a clear message, no hang."""
    fifo = tmp_path / "cfg.yml"
    os.mkfifo(fifo)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kodiai.cli.main", "config", "validate", str(fifo)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("kodiai config validate hangs on a FIFO")
    assert done.returncode == 1, done.stderr
    assert "is a FIFO, not a regular file" in done.stderr
    assert time.monotonic() - started < 60


def test_cli_validate_follows_a_named_symlink_to_a_regular_file(tmp_path: Path) -> None:
    """An operator's own symbolic link is fine for an explicitly named file (only the checkout is hostile)."""
    real = tmp_path / "real.yml"
    real.write_text("model: claude-opus-4-1\n", encoding="utf-8")
    link = tmp_path / "link.yml"
    link.symlink_to(real)
    result = CliRunner().invoke(cli_app, ["config", "validate", str(link), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["config"]["model"] == "claude-opus-4-1"
    assert read_regular_file(link, max_bytes=100) == real.read_bytes()
