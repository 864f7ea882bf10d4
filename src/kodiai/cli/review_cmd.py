"""`kodiai review`: review a local branch (owned by the execution work).

``--dry-run`` prints the exact prompt and the retrieval context without calling the model; otherwise
the executor runs Claude Code on the repository and the comments it would post are printed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from kodiai.handlers.review.local import LocalReview, LocalReviewError, RetrievalReport, build_local_review
from kodiai.learning.embeddings import EmbeddingProvider, build_embedding_provider
from kodiai.settings import Settings, SettingsError

PROMPT_RULE = "===== PROMPT ====="
RETRIEVAL_RULE = "===== RETRIEVAL CONTEXT ====="


def _embedder(settings: Settings, choice: str | None) -> EmbeddingProvider:
    key = settings.voyage_api_key.get_secret_value() if settings.voyage_api_key else None
    return build_embedding_provider(choice or settings.resolved_embedding_provider(), voyage_api_key=key)


def format_retrieval(report: RetrievalReport) -> str:
    lines = [f"status: {report.status}"]
    for label, value in (
        ("memory store", report.memory_uri),
        ("detail", report.detail),
        ("query", report.query),
        (
            "threshold",
            f"{report.distance_threshold} ({report.threshold_method})" if report.threshold_method else None,
        ),
    ):
        if value:
            lines.append(f"{label}: {value}")
    lines.append(f"results: {len(report.results)}")
    for m in report.results:
        lines.append(
            f"- [{m.severity}/{m.category}] {m.file_path}: {m.finding_text} (outcome: {m.outcome}, "
            f"distance: {m.adjusted_distance:.3f}{', confidence: ' + m.confidence if m.confidence else ''})"
        )
    return "\n".join(lines)


def _print_dry_run(review: LocalReview, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(review.model_dump(), indent=2))
        return
    header = [
        f"repository: {review.owner}/{review.repo}",
        f"range: {review.base_ref}...{review.head_ref} ({review.base_sha[:12]}...{review.head_sha[:12]})",
        f"changed files: {len(review.changed_files)}",
        f"profile: {review.profile}",
        f"timeout: {review.timeout_seconds}s",
        *[f"config warning: {w}" for w in review.config_warnings],
    ]
    typer.echo("\n".join(header))
    typer.echo(RETRIEVAL_RULE)
    typer.echo(format_retrieval(review.retrieval))
    typer.echo(PROMPT_RULE)
    typer.echo(review.prompt)


def _print_run(result: Any, recorder: Any, console: Console) -> None:
    console.print(
        f"conclusion: {result.conclusion}  published: {result.published}  turns: {result.num_turns}"
    )
    if result.error_message:
        console.print(f"error: {result.error_message}", style="red", markup=False)
    for c in recorder.review_comments:
        typer.echo(f"--- inline {c.get('path')}:{c.get('line')}\n{c['body']}")
    for c in recorder.issue_comments:
        typer.echo(f"--- comment\n{c['body']}")
    for r in recorder.reviews:
        typer.echo(f"--- review {r['state']}\n{r['body']}")


def review(
    repo: str = typer.Option(".", "--repo", help="Path to a local git repository."),
    base: str = typer.Option(..., "--base", help="Base ref (the PR's target branch)."),
    head: str = typer.Option("HEAD", "--head", help="Head ref (the PR's branch)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the prompt and retrieval context only."),
    as_json: bool = typer.Option(False, "--json", help="With --dry-run: print the whole context as JSON."),
    memory: str | None = typer.Option(
        None, "--memory", help="Learned-memory URI (default LEARNING_MEMORY_URI)."
    ),
    embeddings: str | None = typer.Option(
        None, "--embeddings", help="voyage, local or none (default from env)."
    ),
    repo_name: str | None = typer.Option(
        None, "--repo-name", help="owner/name (default: the origin remote)."
    ),
    cli_path: str | None = typer.Option(
        None, "--cli-path", help="Claude Code executable (default: the one bundled with the SDK)."
    ),
) -> None:
    """Review a local branch: build the review context for BASE...HEAD and run (or show) it."""
    console = Console(stderr=True)
    try:
        settings = Settings.load(require_github_app=False)
    except SettingsError as exc:
        console.print(f"Invalid settings: {exc}", style="red", markup=False)
        raise typer.Exit(code=2) from None
    try:
        local = asyncio.run(
            build_local_review(
                Path(repo),
                base,
                head,
                embedder_factory=lambda: _embedder(settings, embeddings),
                memory_uri=memory or settings.learning_memory_uri,
                repo_name=repo_name,
            )
        )
    except LocalReviewError as exc:
        console.print(f"kodiai review: {exc}", style="red", markup=False)
        raise typer.Exit(code=1) from None
    if dry_run:
        _print_dry_run(local, as_json)
        return
    if (
        settings.claude_code_oauth_token is None
        and settings.anthropic_api_key is None
        and not settings.model_endpoint_env()
    ):
        console.print(
            "Set CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_API_KEY (or a gateway/Bedrock/Vertex endpoint) to run "
            "the model, or use --dry-run.",
            style="red",
        )
        raise typer.Exit(code=2)
    from kodiai.handlers.review.local import git, run_local_review
    from kodiai.server.composition import model_credentials

    if git(Path(repo), "rev-parse", "HEAD").strip() != local.head_sha:
        console.print(
            f"warning: the working tree is not at {head}; the model reads the files as checked out.",
            style="yellow",
            markup=False,
        )

    credentials = model_credentials(settings)
    result, recorder = asyncio.run(
        run_local_review(local, Path(repo).resolve(), credentials=credentials, cli_path=cli_path)
    )
    _print_run(result, recorder, console)
    if result.conclusion != "success":
        reason = result.error_message or f"the run ended with conclusion {result.conclusion}"
        console.print(f"kodiai review: the review did not complete: {reason}", style="red", markup=False)
        raise typer.Exit(code=1)
