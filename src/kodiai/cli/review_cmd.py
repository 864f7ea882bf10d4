"""`kodiai review`: review a local branch (owned by the execution work)."""

from __future__ import annotations

import typer


def review(
    repo: str = typer.Option(".", help="Path to a local git repository."),
    base: str = typer.Option(..., help="Base ref."),
    head: str = typer.Option("HEAD", help="Head ref."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the prompt and retrieval context only."),
) -> None:
    """Review a local branch."""
    raise typer.Exit(code=2)
