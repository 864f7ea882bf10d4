"""`kodiai config validate|schema`: check a `.kodiai.yml` and export its JSON Schema."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from ruamel.yaml import YAML

from kodiai.compat.js_yaml import load_yaml
from kodiai.config import (
    CONFIG_FILENAME,
    RepoConfigError,
    RepoConfigResult,
    load_repo_config,
    load_repo_config_file,
)
from kodiai.config.loader import MAX_CONFIG_BYTES
from kodiai.config.schema import repo_config_json_schema
from kodiai.config.unknown_keys import UnknownKey, unknown_keys
from kodiai.github.workspace_files import read_regular_file

app = typer.Typer(help="Check a .kodiai.yml file and export its JSON Schema.", no_args_is_help=True)


def _read(path: Path) -> tuple[Path, RepoConfigResult, bool]:
    """(file, result, file_exists) for a `.kodiai.yml` file or a directory that may hold one."""
    if path.is_dir():
        file = path / CONFIG_FILENAME
        return file, load_repo_config(path), file.is_file()
    return path, load_repo_config_file(path), True


def _document(file: Path) -> object:
    """The parsed YAML document (already known to parse), for the advisories parsing itself ignores."""
    raw = read_regular_file(file, max_bytes=MAX_CONFIG_BYTES)
    return load_yaml(raw.decode("utf-8", errors="replace"))


def _error(console: Console, message: str) -> None:
    """``error: <message>`` in red; the message is escaped (YAML errors and paths contain brackets)."""
    console.print(f"[red]error:[/red] {escape(message)}", highlight=False)


def _kind(document: object) -> str:
    return (
        "a list" if isinstance(document, list) else "empty" if document is None else type(document).__name__
    )


def _yaml_text(data: object) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


#: `kodiai config validate` exit statuses (docs/configuration.md lists them too).
EXIT_OK = 0
EXIT_UNUSABLE = 1
EXIT_NO_PATH = 2
EXIT_FAILED_CLOSED = 3
EXIT_SECTION_RESET = 4


def exit_status(result: RepoConfigResult, *, unknown: int, strict: bool) -> int:
    """3 when a guarded setting failed closed, else 4 when a section fell back to its defaults, else 1 with
    ``--strict`` and an unknown key or advisory, else 0 (pure: the command's decision, testable alone)."""
    if result.failed_closed:
        return EXIT_FAILED_CLOSED
    if result.warnings:
        return EXIT_SECTION_RESET
    if strict and (unknown or result.advisories):
        return EXIT_UNUSABLE
    return EXIT_OK


def _warnings_table(result: RepoConfigResult) -> Table:
    table = Table(
        title="Invalid sections (reset to defaults; guarded settings: safe values)", show_lines=True
    )
    table.add_column("section", style="bold yellow", no_wrap=True)
    table.add_column("issues")
    for warning in result.warnings:
        table.add_row(escape(warning.section), escape("\n".join(warning.issues)))
    return table


@app.command("validate")
def validate(
    path: Annotated[
        Path, typer.Argument(help="A .kodiai.yml file, or a directory containing one.", show_default=True)
    ] = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Also exit 1 on an unknown key or an advisory.")
    ] = False,
) -> None:
    """Check a .kodiai.yml: warnings first (unknown keys with the closest known one, guarded settings that
    failed closed, sections that fell back to their defaults, advisories), then the resolved config.

    Exit status: 0 valid (unknown keys and advisories are printed but pass, unless --strict);
    1 unusable file (YAML syntax error, not a mapping, a special or oversized file), or with --strict an
    unknown key or advisory;
    2 PATH does not exist or cannot be read;
    3 a guarded setting (who or what may act: mention.enabled, mention.allowedUsers,
    mention.allowedDomains, write.*, review.autoApprove, knowledge sharing) could not be read and took its
    safe value, e.g. nobody may mention the bot;
    4 a section was invalid and reset to its defaults (no guarded setting involved).
    """
    out = Console(file=sys.stdout, soft_wrap=True, width=120)
    err = Console(file=sys.stderr, soft_wrap=True, width=120)
    if not path.exists():
        _error(err, f"{path} does not exist")
        raise typer.Exit(EXIT_NO_PATH)
    try:
        file, result, exists = _read(path)
        document = _document(file) if exists else {}
    except RepoConfigError as exc:
        if as_json:
            print(json.dumps({"path": str(path), "error": str(exc)}, indent=2))
        else:
            _error(err, str(exc))
        raise typer.Exit(EXIT_UNUSABLE) from exc
    except OSError as exc:
        _error(err, f"cannot read {path}: {exc.strerror or exc}")
        raise typer.Exit(EXIT_NO_PATH) from exc
    if exists and not isinstance(document, dict):
        message = (
            f"{file} must be a mapping of settings (e.g. `review:`), not {_kind(document)}; "
            "Kodiai would ignore it and use all defaults"
        )
        if as_json:
            print(json.dumps({"path": str(file), "error": message}, indent=2))
        else:
            _error(err, message)
        raise typer.Exit(EXIT_UNUSABLE)
    unknown = unknown_keys(document)
    config = result.config.to_yaml_dict()
    count = len(unknown) + len(result.warnings) + len(result.advisories)
    status = exit_status(result, unknown=len(unknown), strict=strict)
    if as_json:
        payload = {
            "path": str(file),
            "found": exists,
            "exit_status": status,
            "unknown_keys": [u.model_dump() for u in unknown],
            "failed_closed": result.failed_closed,
            "warnings": [w.model_dump() for w in result.warnings],
            "advisories": result.advisories,
            "config": config,
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        _print_warnings(out, unknown, result)
        header = f"# {file}" if exists else f"# no {CONFIG_FILENAME} in {path}: all defaults"
        print(header)
        print(_yaml_text(config), end="")
        if result.failed_closed:
            out.print(
                f"[red]{len(result.failed_closed)} guarded setting(s) failed closed: fix them, "
                "the safe values above are in force.[/red]"
            )
        elif count:
            out.print(f"[yellow]{count} warning(s): see the top of this output.[/yellow]")
        else:
            out.print("[green]OK: no warnings.[/green]")
    if status:
        raise typer.Exit(status)


def _print_warnings(out: Console, unknown: list[UnknownKey], result: RepoConfigResult) -> None:
    for key in unknown:
        out.print(f"[yellow]Warning:[/yellow] {escape(key.message())}", markup=True, highlight=False)
    for line in result.failed_closed:
        out.print(f"[red]Failed closed:[/red] {escape(line)}", highlight=False)
    if result.warnings:
        out.print(_warnings_table(result))
        resets = [w for w in result.warnings if not w.failed_closed]
        if resets:
            out.print(f"[yellow]{len(resets)} section(s) invalid: defaults used for them.[/yellow]")
    for advice in result.advisories:
        out.print(f"[yellow]Advisory:[/yellow] {escape(advice)}")


@app.command("schema")
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Print the JSON Schema (draft 2020-12) of .kodiai.yml, for editors."""
    text = json.dumps(repo_config_json_schema(), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
