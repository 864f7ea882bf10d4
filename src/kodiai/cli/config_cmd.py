"""`kodiai config validate|schema`: check a `.kodiai.yml` and export its JSON Schema."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from ruamel.yaml import YAML

from kodiai.config import (
    CONFIG_FILENAME,
    RepoConfigError,
    RepoConfigResult,
    load_repo_config,
    load_repo_config_file,
)
from kodiai.config.schema import repo_config_json_schema

app = typer.Typer(help="Check a .kodiai.yml file and export its JSON Schema.", no_args_is_help=True)


def _read(path: Path) -> tuple[Path, RepoConfigResult, bool]:
    """(file, result, file_exists) for a `.kodiai.yml` file or a directory that may hold one."""
    if path.is_dir():
        file = path / CONFIG_FILENAME
        return file, load_repo_config(path), file.is_file()
    return path, load_repo_config_file(path), True


def _yaml_text(data: object) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _warnings_table(result: RepoConfigResult) -> Table:
    table = Table(title="Sections reset to their defaults", show_lines=True)
    table.add_column("section", style="bold yellow", no_wrap=True)
    table.add_column("issues")
    for warning in result.warnings:
        table.add_row(warning.section, "\n".join(warning.issues))
    return table


@app.command("validate")
def validate(
    path: Annotated[
        Path, typer.Argument(help="A .kodiai.yml file, or a directory containing one.", show_default=True)
    ] = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Print the resolved config and the sections that fell back to defaults.

    Exit status: 0 when the file parses (even with warnings), 1 on a YAML syntax error, 2 when PATH
    does not exist.
    """
    out = Console(file=sys.stdout, soft_wrap=True, width=120)
    err = Console(file=sys.stderr, soft_wrap=True, width=120)
    if not path.exists():
        err.print(f"[red]error:[/red] {path} does not exist")
        raise typer.Exit(2)
    try:
        file, result, exists = _read(path)
    except RepoConfigError as exc:
        if as_json:
            print(json.dumps({"path": str(path), "error": str(exc)}, indent=2))
        else:
            err.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
        raise typer.Exit(1) from exc
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot read {path}: {exc.strerror or exc}")
        raise typer.Exit(2) from exc
    config = result.config.to_yaml_dict()
    if as_json:
        payload = {
            "path": str(file),
            "found": exists,
            "config": config,
            "warnings": [w.model_dump() for w in result.warnings],
            "advisories": result.advisories,
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    status = f"# {file}" if exists else f"# no {CONFIG_FILENAME} in {path}: all defaults"
    print(status)
    print(_yaml_text(config), end="")
    for advice in result.advisories:
        out.print(f"[yellow]Advisory:[/yellow] {advice}")
    if result.warnings:
        out.print(_warnings_table(result))
        out.print(f"[yellow]{len(result.warnings)} section(s) invalid: defaults used for them.[/yellow]")
    else:
        out.print("[green]OK: no warnings.[/green]")


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
