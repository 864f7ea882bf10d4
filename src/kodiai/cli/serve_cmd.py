"""`kodiai serve`: run the HTTP server (owned by the server/webhook work)."""

from __future__ import annotations

import typer


def serve(
    host: str = typer.Option("0.0.0.0", help="Interface to listen on."),
    port: int | None = typer.Option(None, help="Port (default: PORT env var, else 3000)."),
) -> None:
    """Start the webhook server."""
    raise typer.Exit(code=2)
