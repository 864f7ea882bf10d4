"""The ``kodiai`` command. Each command group lives in its own module and is composed here.

Some command modules pull in heavy libraries (LanceDB, the embedding stack, the Claude SDK), so no
module is imported until its command runs or shows its own help: the root group holds a
:class:`DeferredCommand` per command, which lists itself from :data:`SUMMARIES` and loads the real
command on first use. ``kodiai --help`` imports no command module at all; ``kodiai db --help`` imports
only ``db_cmd``. ``app`` (what tests drive with typer's runner) is the whole CLI.

``-h`` is an alias of ``--help`` everywhere: click contexts inherit ``help_option_names`` from the root.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

HELP = "Kodiai: self-hosted GitHub App that reviews pull requests with Claude and learns from past findings."

#: Top-level commands: name → (module, function).
COMMANDS = {
    "serve": ("kodiai.server.serve_cmd", "serve"),
    "review": ("kodiai.cli.review_cmd", "review"),
}
#: Command groups: name → module whose ``app`` is the group.
GROUPS = {
    "config": "kodiai.cli.config_cmd",
    "db": "kodiai.cli.db_cmd",
    "telemetry": "kodiai.cli.telemetry_cmd",
    "memory": "kodiai.cli.memory_cmd",
    "eval": "kodiai.cli.eval_cmd",
    "jobs": "kodiai.cli.jobs_cmd",
    "backup": "kodiai.cli.backup_cmd",
}
#: Commands attached to a group from another module: (group, name) → (module, function).
EXTRA_COMMANDS = {("memory", "calibrate"): ("kodiai.cli.calibrate_cmd", "calibrate")}

#: One-line help shown in a parent's command list without importing the command's module. Must equal
#: the first line of the command's own help (a test checks); a name missing here is imported to list it.
SUMMARIES = {
    "serve": "Start the webhook server.",
    "review": "Review a pull request (a GitHub URL) or a local branch (--base/--head).",
    "config": "Check a .kodiai.yml file and export its JSON Schema.",
    "db": "Apply and inspect database migrations (additive only).",
    "telemetry": "Operator reports over the telemetry and knowledge databases.",
    "memory": "Learned memory: import, search, list, stats, purge-stale, retire.",
    "eval": "Offline evaluations of the learned memory.",
    "jobs": "List and retry webhook deliveries in the job journal.",
    "backup": "Back up and restore the databases and the learned memory.",
    "memory calibrate": (
        "Derive a headgap profile for the embedder from a labelled set; print it as .kodiai.yml YAML."
    ),
}

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}

#: What typer builds for a command or a group (click's own classes are vendored privately by typer).
Command = TyperCommand | TyperGroup


def _flag_aware_display_type(self: TyperOption, ctx: Any) -> str | None:
    """typer 0.29's rich help prints a flag's value type (``--dry-run <bool>``) though a flag takes no
    value; its plain help does not. Same rule here: no type for flags."""
    if self.is_flag and self.metavar is None:
        return None
    return _typer_display_type_rich(self, ctx)


_typer_display_type_rich = TyperOption.display_type_rich
setattr(TyperOption, "display_type_rich", _flag_aware_display_type)  # noqa: B010 (mypy: method assign)


class DeferredCommand(TyperCommand):
    """A command whose module is imported only when it runs (or shows its own help).

    The parent lists it by ``summary``. Click's group invokes ``sub_ctx.command``, i.e. the command
    :meth:`make_context` built the context for, so delegating that one method runs the real command.
    """

    def __init__(self, name: str, summary: str, load: Callable[[], Command]) -> None:
        super().__init__(name=name, help=summary, add_help_option=False)
        self._load = load
        self._command: Command | None = None

    def load(self) -> Command:
        if self._command is None:
            self._command = self._load()
        return self._command

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        return self.load().make_context(info_name, args, parent=parent, **extra)


_loaded: dict[str, Command] = {}


def _sub_command(holder: typer.Typer, name: str) -> Command:
    """``holder``'s sub-command ``name`` (a Typer with a callback builds a group)."""
    group = typer.main.get_command(holder)
    command = group.commands.get(name) if isinstance(group, TyperGroup) else None
    if not isinstance(command, TyperCommand | TyperGroup):
        raise TypeError(f"no typer command {name!r} in {group!r}")
    return command


def _command(name: str) -> Command:
    """The real click command for a top-level command or group (built once per process)."""
    if name not in _loaded:
        holder = typer.Typer()
        holder.callback()(_noop)  # a group with a callback keeps its single sub-command a sub-command
        if name in COMMANDS:
            module, function = COMMANDS[name]
            holder.command(name)(getattr(import_module(module), function))
        else:
            holder.add_typer(import_module(GROUPS[name]).app, name=name)
        command = _sub_command(holder, name)
        for (group, extra), (module, function) in EXTRA_COMMANDS.items():
            if group == name:
                if not isinstance(command, TyperGroup):
                    raise TypeError(f"{name!r} has extra commands but is not a group")
                command.add_command(
                    DeferredCommand(extra, _summary(f"{group} {extra}"), _function_loader(module, function))
                )
        _loaded[name] = command
    return _loaded[name]


def _function_loader(module: str, function: str) -> Callable[[], Command]:
    def load() -> Command:
        holder = typer.Typer()
        holder.callback()(_noop)
        holder.command("command")(getattr(import_module(module), function))
        return _sub_command(holder, "command")

    return load


def _noop() -> None:
    """(placeholder callback)"""


def _summary(name: str) -> str:
    if name in SUMMARIES:
        return SUMMARIES[name]
    command = _command(name)
    return str(command.help or "").strip().splitlines()[0] if command.help else ""


class RootGroup(TyperGroup):
    """The ``kodiai`` group: every command deferred."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name in [*COMMANDS, *GROUPS]:
            self.add_command(DeferredCommand(name, _summary(name), partial(_command, name)))


def package_version() -> str:
    """The installed distribution's version (importlib.metadata is imported here: it costs ~0.1 s)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kodiai")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"kodiai {package_version()}")
        raise typer.Exit()


app = typer.Typer(
    name="kodiai",
    help=HELP,
    cls=RootGroup,
    no_args_is_help=True,
    add_completion=False,
    context_settings=CONTEXT_SETTINGS,
)


@app.callback()
def _root(
    show_version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Kodiai: self-hosted GitHub App that reviews pull requests with Claude and learns from past findings."""


def main(argv: list[str] | None = None) -> None:
    """Console entry point."""
    app(args=sys.argv[1:] if argv is None else argv, prog_name="kodiai")


if __name__ == "__main__":  # pragma: no cover
    main()
