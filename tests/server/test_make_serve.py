"""``make serve`` stops cleanly: the repository's Makefile recipe, run for real (setup mode, port 0, in a
temporary working directory), stopped as an operator stops it. No ``make: ***`` line, and the server's own
exit status is 0 (it drains, then exits normally instead of dying of the signal)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed"),
]

REPO = Path(__file__).resolve().parents[2]


def start_make_serve(tmp: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """``make -f <repo>/Makefile serve`` in ``tmp``, in its own process group (as a terminal's job); the
    venv already installed (``STAMP=`` skips the install step), the server in setup mode on port 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "MAKE", "MFLAGS"))}
    env.update({"PORT": "0", "HOST": "", "HOME": str(tmp), "LOG_LEVEL": "info"})
    out = tmp / "make.log"
    with out.open("wb") as log:
        proc = subprocess.Popen(
            [
                "make",
                "--no-print-directory",
                "-f",
                str(REPO / "Makefile"),
                f"BIN={REPO / '.venv' / 'bin'}",
                "STAMP=",
                "serve",
            ],
            cwd=tmp,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 180
    while b"Kodiai server started" not in out.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"make serve did not start:\n{out.read_text()[-3000:]}")
        time.sleep(0.1)
    return proc, out


def children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def wait(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise


def test_ctrl_c_stops_make_serve_without_an_error_line(tmp_path: Path) -> None:
    """Ctrl-C: SIGINT to the whole foreground group (make and the server). make ends by the same signal,
    as any interrupted command, after the server exited 0; before, make printed ``*** [serve] Error 130``
    (or ``Interrupt`` without ``exec``)."""
    proc, out = start_make_serve(tmp_path)
    os.killpg(proc.pid, signal.SIGINT)
    code = wait(proc)
    text = out.read_text()
    assert "make: ***" not in text and "Error" not in text and "Traceback" not in text, text[-2000:]
    assert "Kodiai server stopped" in text
    # make re-raises the interrupt on itself (status 130 in a shell, no message) when it handles the signal
    # while the server still runs; when the server has already exited 0 by then, make exits 0. Both are clean.
    assert code in (0, -signal.SIGINT), code


def test_sigterm_to_the_server_ends_make_serve_with_status_0(tmp_path: Path) -> None:
    """A supervisor or ``kill`` stopping the server: make itself then exits 0 (before: ``Terminated``)."""
    proc, out = start_make_serve(tmp_path)
    (server,) = children(proc.pid)  # `exec`: the recipe's shell became the server
    assert "kodiai" in Path(f"/proc/{server}/cmdline").read_bytes().decode(errors="replace")
    os.kill(server, signal.SIGTERM)
    code = wait(proc)
    text = out.read_text()
    assert code == 0 and "make: ***" not in text and "Kodiai server stopped" in text, text[-2000:]
