"""`kodiai eval ...`: offline evaluation of the learned-memory retrieval on labelled data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from kodiai.learning.embeddings import EmbeddingProvider, LocalEmbeddingProvider, build_embedding_provider
from kodiai.learning.evaluation.data import DataError, load_dataset
from kodiai.learning.evaluation.embedding_cache import DEFAULT_CACHE_DIR, EmbeddingFailedError
from kodiai.learning.evaluation.evaluate import evaluate
from kodiai.learning.evaluation.report import result_table
from kodiai.learning.evaluation.runner import ChainOptions

app = typer.Typer(help="Offline evaluations of the learned memory.", no_args_is_help=True)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(1)


def provider_for(name: str, voyage_api_key: str | None) -> EmbeddingProvider:
    """The embedder, or a clear error: an evaluation with the no-op provider measures nothing.

    ``local`` is built directly so a fully cached run never imports the model stack (it loads lazily)."""
    if name.strip().lower() == "local":
        return LocalEmbeddingProvider()
    try:
        provider = build_embedding_provider(name, voyage_api_key=voyage_api_key)
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    if provider.dimensions <= 0:
        raise _fail(f"provider {name!r} produces no embeddings (no-op); use local or voyage with a key")
    return provider


def retrieval_settings(config_path: Path | None) -> tuple[dict[str, Any], str | None, Any]:
    """``topK``/``distanceThreshold``, ``cutStrategy`` and ``calibration`` from a ``.kodiai.yml``."""
    if config_path is None:
        return {}, None, None
    from kodiai.config import RepoConfigError, load_repo_config_file

    try:
        parsed = load_repo_config_file(config_path)
    except (OSError, RepoConfigError) as exc:
        raise _fail(f"{config_path}: {exc}") from exc
    retrieval = parsed.config.knowledge.retrieval
    chain = {"top_k": int(retrieval.top_k), "distance_threshold": retrieval.distance_threshold}
    return chain, retrieval.cut_strategy, retrieval.calibration


@app.command("retrieval")
def retrieval(
    data: Annotated[Path, typer.Option("--data", help="Directory with corpus.jsonl and queries.jsonl.")],
    rereview: Annotated[
        bool, typer.Option("--rereview", help="Use the same-PR re-review track (DIR/rereview/).")
    ] = False,
    provider_name: Annotated[
        str,
        typer.Option("--provider", envvar="EMBEDDING_PROVIDER", help="Embedder: auto, voyage or local."),
    ] = "local",
    voyage_api_key: Annotated[
        str | None, typer.Option("--voyage-api-key", envvar="VOYAGE_API_KEY", hidden=True, show_default=False)
    ] = None,
    cache: Annotated[
        Path, typer.Option("--cache", help="Embedding cache directory (model + text hash).")
    ] = Path(DEFAULT_CACHE_DIR),
    config: Annotated[
        Path | None,
        typer.Option("--config", help="A .kodiai.yml whose knowledge.retrieval keys configure the chain."),
    ] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, max=20)] = None,
    rerank: Annotated[bool, typer.Option("--rerank/--no-rerank", help="Language rerank.")] = True,
    recency: Annotated[bool, typer.Option("--recency/--no-recency", help="Recency weighting.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object keyed by strategy name.")] = False,
) -> None:
    """Run the real retrieval chain over a labelled set and print the quality of every cut strategy."""
    try:
        dataset = load_dataset(data, rereview=rereview)
    except DataError as exc:
        raise _fail(str(exc)) from exc
    chain, cut_strategy, calibration = retrieval_settings(config)
    if top_k is not None:
        chain["top_k"] = top_k
    options = ChainOptions(**chain, language_rerank=rerank, recency=recency)
    provider = provider_for(provider_name, voyage_api_key)
    try:
        result, _ = evaluate(
            dataset,
            provider,
            cache,
            options=options,
            cut_strategy=cut_strategy,
            calibration=calibration,
        )
    except (EmbeddingFailedError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2, sort_keys=False))
        return
    Console(width=200, soft_wrap=False, highlight=False).print(result_table(result))
