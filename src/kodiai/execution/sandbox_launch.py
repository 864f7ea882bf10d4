"""The per-run launcher the SDK starts as "the Claude Code CLI": it drops every environment variable that
is not on the run's allow-list, then ``exec``s the sandbox (``bwrap … -- claude``) or, with
``AGENT_SANDBOX=off``, the CLI itself.

Why a launcher: the SDK passes the whole server environment on to its child (options can only add or
override variables), and ``bwrap --clearenv`` is not enough — bwrap's own PID-1 process inside the
sandbox keeps the environment bwrap was started with, readable at ``/proc/1/environ``. So the filter
runs *before* bwrap, here, and values never travel through an argv (visible to every local user) or a
file: they come from this process's environment and go to ``execve``.

This file is run as ``python -I -S sandbox_launch.py PLAN.json ARGS…``: standard library only.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TypedDict

#: Exit status when the sandbox (or the CLI) cannot be executed at all.
EXEC_FAILED = 127


class LaunchPlan(TypedDict):
    """``PLAN.json``, written by ``sandbox_run.write_launcher``: names and fixed values, never a secret."""

    command: list[str]  # the sandbox (or the CLI) and its arguments
    env_names: list[str]  # inherited variables allowed by exact name
    env_prefixes: list[str]  # … and by prefix
    env_set: dict[str, str]  # fixed values set on top


def env_allowed(name: str, names: Sequence[str], prefixes: Sequence[str]) -> bool:
    """True when ``name`` is on the allow-list (an exact name or one of the prefixes)."""
    return name in names or any(name.startswith(prefix) for prefix in prefixes)


def child_env(environ: Mapping[str, str], plan: LaunchPlan) -> dict[str, str]:
    """The CLI's environment: the allow-listed inherited variables, then the plan's fixed ones."""
    names, prefixes = plan["env_names"], plan["env_prefixes"]
    env = {k: v for k, v in environ.items() if env_allowed(k, names, prefixes)}
    env.update(plan["env_set"])
    return env


def main(argv: Sequence[str]) -> int:
    with open(argv[1], encoding="utf-8") as handle:
        plan: LaunchPlan = json.load(handle)
    command = [*plan["command"], *argv[2:]]
    try:
        os.execve(command[0], command, child_env(os.environ, plan))
    except OSError as exc:
        sys.stderr.write(f"agent sandbox unavailable: cannot execute {command[0]}: {exc.strerror}\n")
    return EXEC_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv))
