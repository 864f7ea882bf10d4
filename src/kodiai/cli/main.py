"""The ``kodiai`` command. Each command group lives in its own module and is composed here.

Some groups pull in heavy libraries when imported (LanceDB, the embedding model's stack), so the console
entry point :func:`main` imports only the group named on the command line: ``kodiai config validate``
or ``kodiai serve`` do not pay for ``kodiai memory``. ``app`` (what tests drive with typer's runner)
is the whole CLI, built on first access.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any

import typer

HELP = "Kodiai: self-hosted GitHub App that reviews pull requests with Claude and learns from past findings."

#: Top-level commands: name → (module, function).
COMMANDS = {
    "serve": ("kodiai.cli.serve_cmd", "serve"),
    "review": ("kodiai.cli.review_cmd", "review"),
}
#: Command groups: name → module whose ``app`` is the group.
GROUPS = {
    "config": "kodiai.cli.config_cmd",
    "db": "kodiai.cli.db_cmd",
    "telemetry": "kodiai.cli.telemetry_cmd",
    "memory": "kodiai.cli.memory_cmd",
    "eval": "kodiai.cli.eval_cmd",
}


def _group(name: str) -> typer.Typer:
    group: typer.Typer = import_module(GROUPS[name]).app
    if name == "memory" and not any(c.name == "calibrate" for c in group.registered_commands):
        group.command("calibrate")(import_module("kodiai.cli.calibrate_cmd").calibrate)
    return group


def build_app(only: str | None = None) -> typer.Typer:
    """The CLI with every command, or with just ``only`` (a command or group name) registered."""
    cli = typer.Typer(name="kodiai", help=HELP, no_args_is_help=True, add_completion=False)

    @cli.callback()
    def _root() -> None:
        """Kodiai: self-hosted GitHub App that reviews pull requests with Claude and learns from past findings."""

    for name, (module, function) in COMMANDS.items():
        if only in (None, name):
            cli.command(name)(getattr(import_module(module), function))
    for name in GROUPS:
        if only in (None, name):
            cli.add_typer(_group(name), name=name)
    return cli


def main(argv: list[str] | None = None) -> None:
    """Console entry point: build only the command the arguments name, then run it."""
    args = sys.argv[1:] if argv is None else argv
    first = next((a for a in args if not a.startswith("-")), None)
    only = first if first in COMMANDS or first in GROUPS else None
    build_app(only)(args=args, prog_name="kodiai")


_full_app: typer.Typer | None = None


def __getattr__(name: str) -> Any:
    """``from kodiai.cli.main import app``: the whole CLI, built once."""
    global _full_app
    if name == "app":
        if _full_app is None:
            _full_app = build_app()
        return _full_app
    raise AttributeError(name)


if __name__ == "__main__":  # pragma: no cover
    main()
