"""`kodiai review`: review a pull request by URL, or a local branch.

``kodiai review https://github.com/OWNER/REPO/pull/N`` fetches the PR through the API (``GITHUB_TOKEN``,
else the GitHub App's installation), clones it as the webhook handler does and reviews it; ``--post``
publishes the comments on the PR. ``kodiai review --base main [--head topic] [--path .]`` reviews a local
range instead. ``--dry-run`` prints the exact prompt and the retrieval context without calling the model;
otherwise Claude Code runs on the checkout and the comments are printed (and, with ``--post``, posted).

Everything heavy (the review pipeline, LanceDB, the Claude SDK) is imported inside the command, so
``kodiai review --help`` stays fast.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

if TYPE_CHECKING:
    from kodiai.execution.local_rest import RecordingGitHub
    from kodiai.execution.types import ExecutionResult
    from kodiai.learning.embeddings import EmbeddingProvider
    from kodiai.review.local_branch import LocalReview, RetrievalReport
    from kodiai.settings import Settings

PROMPT_RULE = "===== PROMPT ====="
RETRIEVAL_RULE = "===== RETRIEVAL CONTEXT ====="


def _embedder(settings: Settings, choice: str | None) -> EmbeddingProvider:
    from kodiai.learning.embeddings import build_embedding_provider

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
        *([f"pull request: #{review.number} {review.url or ''}".rstrip()] if review.number else []),
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


def _print_run(result: ExecutionResult, recorder: RecordingGitHub, console: Console) -> None:
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


def _fail(console: Console, message: str, code: int = 1) -> typer.Exit:
    console.print(f"kodiai review: {message}", style="red", markup=False, soft_wrap=True)
    return typer.Exit(code=code)


def _require_model(settings: Settings, console: Console) -> None:
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


async def _run_model(
    local: LocalReview, checkout: Path, settings: Settings, cli_path: str | None, console: Console
) -> RecordingGitHub:
    """Run Claude Code on the checkout with GitHub replaced by a recorder; print what it would post."""
    from kodiai.review.local_branch import run_local_review
    from kodiai.server.composition import agent_sandbox, model_credentials

    result, recorder = await run_local_review(
        local,
        checkout,
        credentials=model_credentials(settings),
        cli_path=cli_path,
        sandbox=agent_sandbox(settings),
    )
    _print_run(result, recorder, console)
    if result.conclusion != "success":
        reason = result.error_message or f"the run ended with conclusion {result.conclusion}"
        raise _fail(console, f"the review did not complete: {reason}")
    return recorder


def review(
    pull_url: Annotated[
        str | None,
        typer.Argument(
            metavar="PR_URL",
            help="A pull request URL (https://github.com/OWNER/REPO/pull/N, or on a GitHub Enterprise host "
            "with GITHUB_API_URL set): fetch, clone and review it. Without it: a local range (--base).",
            show_default=False,
        ),
    ] = None,
    base: Annotated[
        str | None, typer.Option("--base", help="Local mode: base ref (the PR's target branch).")
    ] = None,
    head: Annotated[str, typer.Option("--head", help="Local mode: head ref (the PR's branch).")] = "HEAD",
    path: Annotated[Path, typer.Option("--path", help="Local mode: the git checkout to review.")] = Path("."),
    repo: Annotated[
        str | None,
        typer.Option(
            "--repo", help="Local mode: owner/name (default: the origin remote).", show_default=False
        ),
    ] = None,
    repo_name: Annotated[
        str | None, typer.Option("--repo-name", hidden=True, help="Deprecated: use --repo.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the prompt and retrieval context; do not run the model.")
    ] = False,
    post: Annotated[
        bool,
        typer.Option(
            "--post", help="URL mode: post the comments on the PR (one review + the summary comment)."
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="With --dry-run: print the whole context as JSON.")
    ] = False,
    memory: Annotated[
        str | None, typer.Option("--memory", help="Learned-memory URI (default LEARNING_MEMORY_URI).")
    ] = None,
    embeddings: Annotated[
        str | None, typer.Option("--embeddings", help="voyage, local or none (default from env).")
    ] = None,
    cli_path: Annotated[
        str | None,
        typer.Option("--cli-path", help="Claude Code executable (default: the one bundled with the SDK)."),
    ] = None,
) -> None:
    """Review a pull request (a GitHub URL) or a local branch (--base/--head)."""
    from kodiai.settings import Settings, SettingsError

    console = Console(stderr=True)
    try:
        settings = Settings.load(require_github_app=False)
    except SettingsError as exc:
        raise _fail(console, f"invalid settings: {exc}", code=2) from None
    if pull_url is not None:
        if base is not None or repo is not None or repo_name is not None or path != Path("."):
            raise _fail(
                console,
                "a PR URL names the repository and both refs: drop --base/--head/--path/--repo",
                code=2,
            )
        if dry_run and post:
            raise _fail(console, "--dry-run prints the prompt and posts nothing: use one of them", code=2)
        _review_pull(pull_url, settings, console, dry_run, post, as_json, memory, embeddings, cli_path)
        return
    if post:
        raise _fail(console, "--post needs a pull request URL (kodiai review URL --post)", code=2)
    if base is None:
        raise _fail(
            console,
            "give a pull request URL, or --base for a local range (e.g. kodiai review --base main)",
            code=2,
        )
    if repo_name is not None:
        console.print("warning: --repo-name is deprecated: use --repo owner/name", style="yellow")
    name = repo or repo_name
    if name is not None and (name.count("/") != 1 or not all(name.split("/"))):
        hint = "; a local checkout is --path" if Path(name).exists() else ""
        raise _fail(console, f"--repo must look like owner/name, got {name!r}{hint}")
    _review_local(path, base, head, name, settings, console, dry_run, as_json, memory, embeddings, cli_path)


def _review_local(
    path: Path,
    base: str,
    head: str,
    repo: str | None,
    settings: Settings,
    console: Console,
    dry_run: bool,
    as_json: bool,
    memory: str | None,
    embeddings: str | None,
    cli_path: str | None,
) -> None:
    from kodiai.review.local_branch import LocalReviewError, build_local_review, git

    try:
        local = asyncio.run(
            build_local_review(
                path,
                base,
                head,
                embedder_factory=lambda: _embedder(settings, embeddings),
                memory_uri=memory or settings.learning_memory_uri,
                repo_name=repo,
            )
        )
    except LocalReviewError as exc:
        raise _fail(console, str(exc)) from None
    if dry_run:
        _print_dry_run(local, as_json)
        return
    _require_model(settings, console)
    if git(path, "rev-parse", "HEAD").strip() != local.head_sha:
        console.print(
            f"warning: the working tree is not at {head}; the model reads the files as checked out.",
            style="yellow",
            markup=False,
        )
    asyncio.run(_run_model(local, path.resolve(), settings, cli_path, console))


def _review_pull(
    url: str,
    settings: Settings,
    console: Console,
    dry_run: bool,
    post: bool,
    as_json: bool,
    memory: str | None,
    embeddings: str | None,
    cli_path: str | None,
) -> None:
    from kodiai.review.remote_pr import RemoteReviewError, open_pull, post_review

    if not dry_run:
        _require_model(settings, console)

    async def run() -> None:
        try:
            opening = open_pull(
                url,
                settings,
                memory_uri=memory or settings.learning_memory_uri,
                embedder_factory=lambda: _embedder(settings, embeddings),
            )
            async with opening as opened:
                if dry_run:
                    _print_dry_run(opened.review, as_json)
                    return
                recorder = await _run_model(opened.review, opened.checkout, settings, cli_path, console)
                if post:
                    posted = await post_review(opened, recorder)
                    console.print(posted, markup=False, soft_wrap=True)
        except RemoteReviewError as exc:
            raise _fail(console, str(exc)) from None

    asyncio.run(run())
