"""A checkout whose ``.git`` tries to make every git command run a program (real ``git``).

What anything with write access to a workspace's ``.git`` could plant: ``core.fsmonitor``, hooks
(``pre-commit``, ``post-commit``, ``post-checkout``, ``pre-push``), ``diff.external``, a textconv driver
and clean/smudge and long-running ``process`` filter drivers bound by the tree's ``.gitattributes``, a
credential helper (plain and URL-scoped), ``protocol.ext.allow=always`` and an HTTP proxy. Each planted
program appends its role to :attr:`HostileRepo.marker`; a test runs git one way, then asserts which roles
ran. :func:`plain_git` is git as a user runs it, for the control case that shows the plants are live.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from support.gitrepo import GIT_ENV, BareRepo

HOOKS = ("pre-commit", "post-commit", "post-checkout", "pre-push")
ATTRIBUTES = "*.x diff=x filter=f\n*.y filter=p\n"
#: Roles whose program only a plain checkout (no network) can trigger.
LOCAL_ROLES = frozenset(
    {"fsmonitor", *HOOKS, "external-diff", "textconv", "filter-clean", "filter-smudge", "filter-process"}
)

_TAILS = {
    "textconv": 'cat "$1"\n',
    "filter-clean": "cat\n",
    "filter-smudge": "cat\n",
    "filter-process": "exit 1\n",  # not the long-running protocol: git notes the failure, passes through
    "credential": "exit 0\n",
    "ext": "exit 1\n",
}


@dataclass
class HostileRepo:
    dir: Path
    marker: Path

    def ran(self) -> set[str]:
        """The roles of the planted programs that have run so far."""
        if not self.marker.exists():
            return set()
        return {line.split()[0] for line in self.marker.read_text(encoding="utf-8").splitlines() if line}

    def reset(self) -> None:
        self.marker.unlink(missing_ok=True)

    def script(self, role: str) -> Path:
        return plants_dir(self.dir) / role


def plants_dir(checkout: Path) -> Path:
    """Where the planted programs of ``checkout`` live (beside it, one directory per checkout)."""
    return checkout.parent / f"{checkout.name}.plants"


def make_remote(root: Path) -> BareRepo:
    """``acme/widgets`` with two commits touching a textconv/filter file and code. No ``*.y`` file is
    committed: plain git would run the (broken) process filter on any racily-clean one and die."""
    remote = BareRepo(root / "remote", "acme", "widgets")
    remote.commit({".gitattributes": ATTRIBUTES, "a.x": "one\n", "app.py": "import requests\n"}, "init")
    remote.commit({"a.x": "one\ntwo\n", "app.py": "import requests\nx = 1\n"}, "more")
    return remote


def plant(checkout: Path, marker: Path) -> None:
    """Write the programs next to ``checkout`` and wire them into its ``.git`` (config and hooks)."""
    plants = plants_dir(checkout)
    plants.mkdir(exist_ok=True)
    roles = [*sorted(LOCAL_ROLES), "credential", "ext"]
    for role in roles:
        body = f'#!/bin/sh\necho "{role} $*" >> "{marker}"\n' + _TAILS.get(role, "exit 0\n")
        path = plants / role
        path.write_text(body, encoding="utf-8")
        path.chmod(0o755)
    config = {
        "core.fsmonitor": plants / "fsmonitor",
        "diff.external": plants / "external-diff",
        "diff.x.textconv": plants / "textconv",
        "filter.f.clean": plants / "filter-clean",
        "filter.f.smudge": plants / "filter-smudge",
        "filter.p.process": plants / "filter-process",
        "credential.helper": plants / "credential",
        "credential.http://127.0.0.1.helper": plants / "credential",
        "protocol.ext.allow": "always",
    }
    config_file = checkout / ".git" / "config"
    for key, value in config.items():
        subprocess.run(["git", "config", "--file", str(config_file), key, str(value)], check=True)
    hooks = checkout / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in HOOKS:
        target = hooks / hook
        target.write_text(f'#!/bin/sh\necho "{hook} $*" >> "{marker}"\nexit 0\n', encoding="utf-8")
        target.chmod(0o755)


def plain_env(home: Path) -> dict[str, str]:
    """git as a user runs it (their environment, a fixed identity): nothing of the app's hardening."""
    env = {**os.environ, **GIT_ENV, "HOME": str(home)}
    for name in ("no_proxy", "NO_PROXY"):
        env.pop(name, None)
    return env


def plain_git(
    checkout: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=checkout,
        env=dict(env) if env is not None else plain_env(checkout.parent),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


class _Recorder(BaseHTTPRequestHandler):
    """Answers 401 with a Basic challenge (so git asks a credential helper); records every request line."""

    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(self.requestline)
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="x"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        return


@contextmanager
def recording_http_server() -> Iterator[tuple[str, list[str]]]:
    """``(base URL, request lines seen)`` of a loopback server that refuses every request with 401."""
    seen: list[str] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
