"""`kodiai config ...` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="config commands", no_args_is_help=True)
