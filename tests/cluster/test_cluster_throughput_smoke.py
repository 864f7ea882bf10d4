"""``benchmarks/cluster_throughput.py``, whose figures docs/deployment.md quotes, keeps working: its smallest
run (a durable PostgreSQL, one ``--role web`` + one ``--role worker`` replica reviewing 3 PRs through the real
Claude Code CLI, then the ack latency of a web replica on PostgreSQL and of ``kodiai serve`` on SQLite)
ends with every review done and no delivery refused."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_cluster_throughput_smoke_prints_both_tables() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cluster_throughput.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    row = re.search(r"^\s+1\s+2\s+3\s+[\d.]+\s+([\d.]+)\s+1\.00\s+([\d.]+)\s+\d+$", done.stdout, re.M)
    assert row is not None, done.stdout
    assert float(row.group(1)) > 0 and float(row.group(2)) > 0  # reviews/min, cpu-s per review
    for server in (r"web on PostgreSQL \(\+1 worker\)", "all-in-one on SQLite"):
        ack = re.search(rf"^{server}\s+\d+\s+([\d.]+)\s+([\d.]+)\s+0\s", done.stdout, re.M)
        assert ack is not None, done.stdout
        assert 0 < float(ack.group(1)) <= float(ack.group(2))  # p50 <= p99, no errors
