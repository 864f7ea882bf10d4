"""The ``kodiai`` command. Each command group lives in its own module and is composed here."""

from __future__ import annotations

import typer

from kodiai.cli import (
    calibrate_cmd,
    config_cmd,
    db_cmd,
    eval_cmd,
    memory_cmd,
    review_cmd,
    serve_cmd,
    telemetry_cmd,
)

app = typer.Typer(
    name="kodiai",
    help="Kodiai: self-hosted GitHub App that reviews pull requests with Claude and learns from past findings.",
    no_args_is_help=True,
    add_completion=False,
)
app.command("serve")(serve_cmd.serve)
app.command("review")(review_cmd.review)
app.add_typer(config_cmd.app, name="config")
app.add_typer(db_cmd.app, name="db")
app.add_typer(telemetry_cmd.app, name="telemetry")
memory_cmd.app.command("calibrate")(calibrate_cmd.calibrate)
app.add_typer(memory_cmd.app, name="memory")
app.add_typer(eval_cmd.app, name="eval")

if __name__ == "__main__":  # pragma: no cover
    app()
