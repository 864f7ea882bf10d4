"""`kodiai telemetry ...` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="telemetry commands", no_args_is_help=True)
