"""Memory and CPU of a process and all its descendants, read from ``/proc`` (Linux; no psutil).

A review is the server process plus, per running review, bubblewrap, the Claude Code CLI inside it and
short-lived git children. The RSS sum counts pages shared between processes (the CLI binary's code, once
per CLI) once per process; PSS divides each shared page among its users, so the PSS sum is what the
machine really holds. Both are sampled; the CPU of exited children is in the parent's ``cutime``/
``cstime`` once it has waited for them, so the server's own counters cover the whole tree after a run.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()  # the command name may hold spaces and parentheses


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def rss_kib(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_KIB
    except (OSError, IndexError, ValueError):
        return 0


def pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, IndexError, ValueError):
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system time of ``pid`` and of the children it has waited for."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICKS


@dataclass(frozen=True)
class Sample:
    rss_kib: int
    pss_kib: int
    processes: int


def sample(root: int) -> Sample:
    pids = descendants(root)
    return Sample(sum(rss_kib(p) for p in pids), sum(pss_kib(p) for p in pids), len(pids))


class TreeSampler:
    """Samples a process tree every ``interval`` seconds in a thread; keeps the peaks."""

    def __init__(self, root: int, interval: float = 0.1) -> None:
        self.root = root
        self.interval = interval
        self.peak_rss = self.peak_pss = self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            s = sample(self.root)
            self.peak_rss = max(self.peak_rss, s.rss_kib)
            self.peak_pss = max(self.peak_pss, s.pss_kib)
            self.peak_processes = max(self.peak_processes, s.processes)
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def settled(root: int, seconds: float = 2.0) -> Sample:
    """The tree's size after ``seconds`` of quiet: the highest of a few samples (a baseline)."""
    samples = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        samples.append(sample(root))
        time.sleep(0.2)
    samples.append(sample(root))
    return max(samples, key=lambda s: s.pss_kib)
