"""Start-up benchmark: how long ``python -m kodiai.server`` takes to answer ``/health`` and ``/readiness``.

Restarts and rolling deploys wait on it, and the test suite starts the server ~100 times. Each run starts
a fresh process (SQLite stores in a temp dir, the fake GitHub of the tests, an env file as the
``kodiai serve`` tests write) and polls both endpoints every 10 ms from the moment of the spawn. Two
configurations: learned memory on (``EMBEDDING_PROVIDER=local``, the LanceDB store opened) and off
(``EMBEDDING_PROVIDER=none``). The baseline in the same run is ``python -c "import fastapi, uvicorn"``,
the floor of any FastAPI server start. ``cpu`` is the child's user + system CPU for the whole run
(start, answers, SIGTERM drain), less sensitive to a busy machine than the wall times.

    .venv/bin/python benchmarks/startup.py            # 5 starts per configuration
    .venv/bin/python benchmarks/startup.py -n 10 --only none
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECRET = "bench-webhook-secret"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return None


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _env(tmp: Path, fake_url: str, app_id: int, key: str, provider: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "WEBHOOK_"))}
    env.update(
        {
            "JOBS_DB_PATH": str(tmp / "jobs.db"),
            "TELEMETRY_DB_PATH": str(tmp / "telemetry.db"),
            "KNOWLEDGE_DB_PATH": str(tmp / "knowledge.db"),
            "LEARNING_MEMORY_URI": str(tmp / "memory.lance"),
            "WORKSPACE_ROOT": str(tmp / "ws"),
            "EMBEDDING_PROVIDER": provider,
            "HF_HUB_OFFLINE": "1",
            "LOG_LEVEL": "info",
            "SHUTDOWN_GRACE_SECONDS": "5",
            "HOME": str(tmp),
        }
    )
    # The App settings come from the env file, as in a deployment.
    pem = key.replace("\n", "\\n")
    (tmp / ".env").write_text(
        f'GITHUB_APP_ID={app_id}\nGITHUB_PRIVATE_KEY="{pem}"\nGITHUB_WEBHOOK_SECRET={SECRET}\n'
        f"GITHUB_API_URL={fake_url}\n"
    )
    return env


def start_once(fake_url: str, app_id: int, key: str, provider: str) -> tuple[float, float, float]:
    """(seconds to /health 200, seconds to /readiness 200, child CPU seconds) of one fresh start."""
    with tempfile.TemporaryDirectory(prefix="kodiai-startup-") as name:
        tmp = Path(name)
        port = _free_port()
        env = _env(tmp, fake_url, app_id, key, provider)
        cpu0 = _children_cpu()
        started = time.monotonic()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kodiai.server",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--env-file",
                str(tmp / ".env"),
            ],
            env=env,
            cwd=tmp,
            stdout=(tmp / "server.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        health = ready = 0.0
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = started + 120
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"server exited {proc.returncode}:\n{(tmp / 'server.log').read_text()[-2000:]}"
                    )
                if not health and _status(base + "/health") == 200:
                    health = time.monotonic() - started
                if health and _status(base + "/readiness") == 200:
                    ready = time.monotonic() - started
                    break
                time.sleep(0.01)
            else:
                raise RuntimeError(f"not ready in 120 s:\n{(tmp / 'server.log').read_text()[-2000:]}")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        return health, ready, _children_cpu() - cpu0


def baseline_once() -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``python -c "import fastapi, uvicorn"``."""
    cpu0 = _children_cpu()
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import fastapi, uvicorn"], check=True)
    return time.monotonic() - started, _children_cpu() - cpu0


def _row(label: str, values: list[float]) -> str:
    return (
        f"  {label:<13} p50 {statistics.median(values):6.2f} s   min {min(values):6.2f} s"
        f"   max {max(values):6.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=5, help="starts per configuration (default 5)")
    parser.add_argument("--only", choices=["memory", "none"], help="one configuration only")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT / "tests"))
    from support.fake_github import FakeGitHub

    fake = FakeGitHub().start()
    try:
        print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, {args.n} starts each")
        base = [baseline_once() for _ in range(args.n)]
        print('baseline: python -c "import fastapi, uvicorn"')
        print(_row("wall", [b[0] for b in base]))
        print(_row("cpu", [b[1] for b in base]))
        configs = {"memory": "local", "none": "none"}
        for label, provider in configs.items():
            if args.only and args.only != label:
                continue
            runs = [start_once(fake.url, fake.app_id, fake.private_key_pem, provider) for _ in range(args.n)]
            print(
                f"kodiai serve, EMBEDDING_PROVIDER={provider} ({'learned memory on' if label == 'memory' else 'no memory store'})"
            )
            print(_row("/health", [r[0] for r in runs]))
            print(_row("/readiness", [r[1] for r in runs]))
            print(_row("cpu", [r[2] for r in runs]))
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
