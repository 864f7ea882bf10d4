"""`kodiai eval ...`: offline evaluation of the learned-memory retrieval on labelled data.

The learning stack (numpy, LanceDB, the embedder) is imported inside the command, so ``--help`` is instant.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from kodiai.evaluation.defaults import BOOTSTRAP_REPS, DEFAULT_CACHE_DIR

if TYPE_CHECKING:
    from kodiai.evaluation.data import EvalDataset
    from kodiai.evaluation.evaluate import EvalResult
    from kodiai.evaluation.loo import LooResult
    from kodiai.learning.embeddings import EmbeddingProvider
    from kodiai.learning.stages import StageSwitches

_T = TypeVar("_T")


def min_abstain_option(help_text: str) -> Any:
    """``--min-abstain`` (a share, 0 = off) with the command's own help."""
    return typer.Option("--min-abstain", min=0.0, max=1.0, help=help_text)


app = typer.Typer(help="Offline evaluations of the learned memory.", no_args_is_help=True)

# The options every evaluation command shares (``kodiai memory calibrate`` too).
DataOpt = Annotated[Path, typer.Option("--data", help="Directory with corpus.jsonl and queries.jsonl.")]
ProviderOpt = Annotated[
    str, typer.Option("--provider", envvar="EMBEDDING_PROVIDER", help="Embedder: auto, voyage or local.")
]
VoyageKeyOpt = Annotated[
    str | None, typer.Option("--voyage-api-key", envvar="VOYAGE_API_KEY", hidden=True, show_default=False)
]
CacheOpt = Annotated[Path, typer.Option("--cache", help="Embedding cache directory (model + text hash).")]
BootstrapOpt = Annotated[
    int, typer.Option("--bootstrap", min=0, help="Bootstrap replicates for the 95% intervals (0 = none).")
]


def fail(message: str) -> typer.Exit:
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(1)


def inputs(
    load: Callable[[], _T], provider_name: str, voyage_api_key: str | None
) -> tuple[_T, EmbeddingProvider]:
    """The labelled data ``load`` reads (a data error is a clear exit) and the embedder."""
    from kodiai.evaluation.data import DataError

    try:
        data = load()
    except DataError as exc:
        raise fail(str(exc)) from exc
    return data, provider_for(provider_name, voyage_api_key)


def provider_for(name: str, voyage_api_key: str | None) -> EmbeddingProvider:
    """The embedder, or a clear error: an evaluation with the no-op provider measures nothing.

    ``local`` is built directly so a fully cached run never imports the model stack (it loads lazily)."""
    from kodiai.learning.embeddings import LocalEmbeddingProvider, build_embedding_provider

    if name.strip().lower() == "local":
        return LocalEmbeddingProvider()
    try:
        provider = build_embedding_provider(name, voyage_api_key=voyage_api_key)
    except ValueError as exc:
        raise fail(str(exc)) from exc
    if provider.dimensions <= 0:
        raise fail(f"provider {name!r} produces no embeddings (no-op); use local or voyage with a key")
    return provider


def retrieval_settings(config_path: Path | None) -> tuple[dict[str, Any], str | None, Any, StageSwitches]:
    """``topK``/``distanceThreshold``, ``cutStrategy``, ``calibration`` and the stages (``abstain`` /
    ``secondStage``: unset = on, as the review runs them) from a ``.kodiai.yml``."""
    from kodiai.learning.stages import StageSwitches

    if config_path is None:
        return {}, None, None, StageSwitches.of(None, None)
    from kodiai.config import RepoConfigError, load_repo_config_file

    try:
        parsed = load_repo_config_file(config_path)
    except (OSError, RepoConfigError) as exc:
        raise fail(f"{config_path}: {exc}") from exc
    retrieval = parsed.config.knowledge.retrieval
    chain = {"top_k": int(retrieval.top_k), "distance_threshold": retrieval.distance_threshold}
    switches = StageSwitches.of(retrieval.abstain, retrieval.second_stage)
    return chain, retrieval.cut_strategy, retrieval.calibration, switches


@app.command("retrieval")
def retrieval(
    data: DataOpt,
    rereview: Annotated[
        bool, typer.Option("--rereview", help="Use the same-PR re-review track (DIR/rereview/).")
    ] = False,
    loo: Annotated[
        bool,
        typer.Option(
            "--loo",
            help="Both tracks, then leave-one-repository-out: calibrate on all repositories but one, "
            "score that one, for each; with the targets.",
        ),
    ] = False,
    provider_name: ProviderOpt = "local",
    voyage_api_key: VoyageKeyOpt = None,
    cache: CacheOpt = Path(DEFAULT_CACHE_DIR),
    config: Annotated[
        Path | None,
        typer.Option("--config", help="A .kodiai.yml whose knowledge.retrieval keys configure the chain."),
    ] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, max=20)] = None,
    rerank: Annotated[bool, typer.Option("--rerank/--no-rerank", help="Language rerank.")] = True,
    recency: Annotated[bool, typer.Option("--recency/--no-recency", help="Recency weighting.")] = True,
    lexical: Annotated[
        bool, typer.Option("--lexical/--no-lexical", help="The lexical (full-text) channel.")
    ] = True,
    bootstrap: BootstrapOpt = BOOTSTRAP_REPS,
    min_abstain: Annotated[
        float,
        min_abstain_option(
            "With --loo: the re-review abstain constraint of the fitted calibration (0 = off)."
        ),
    ] = 0.0,
    all_fixed: Annotated[bool, typer.Option("--all-fixed", help="Show every fixed threshold.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object keyed by strategy name.")] = False,
) -> None:
    """Run the real retrieval chain over a labelled set and print the quality of every cut strategy.

    The default row is what the review runs: the model's cut followed by the stages (abstention and the
    second stage, on unless the ``--config`` file sets them ``false``); ``headgap`` and ``maxgap`` stay as
    rows for comparison. Under ``--loo`` the stages' models are trained per fold."""
    from kodiai.cli.progress import stage_progress
    from kodiai.evaluation.data import REREVIEW_DIR, load_dataset
    from kodiai.evaluation.embedding_cache import EmbeddingFailedError
    from kodiai.evaluation.evaluate import evaluate
    from kodiai.evaluation.loo import evaluation_loo
    from kodiai.evaluation.runner import ChainOptions

    def load() -> list[EvalDataset]:
        if not loo:
            return [load_dataset(data, rereview=rereview)]
        both = (data / REREVIEW_DIR / "queries.jsonl").is_file()
        return [load_dataset(data), *([load_dataset(data, rereview=True)] if both else [])]

    datasets, provider = inputs(load, provider_name, voyage_api_key)
    chain, cut_strategy, calibration, switches = retrieval_settings(config)
    if top_k is not None:
        chain["top_k"] = top_k
    options = ChainOptions(**chain, language_rerank=rerank, recency=recency, lexical=lexical)
    results: dict[str, EvalResult] = {}
    pools: dict[str, Any] = {}
    try:
        with stage_progress() as stages:
            for dataset in datasets:
                results[dataset.name], pools[dataset.name] = evaluate(
                    dataset,
                    provider,
                    cache,
                    options=options,
                    cut_strategy=cut_strategy,
                    calibration=calibration,
                    bootstrap_reps=bootstrap,
                    on_embedded=stages.report(f"{dataset.name}: embedding with {provider.model}"),
                    on_query=stages.report(f"{dataset.name}: queries through the chain"),
                    stages=switches,
                )
        held_out = (
            evaluation_loo(
                pools,
                model=provider.model,
                options=options,
                calibration=calibration,
                min_abstain=min_abstain,
                bootstrap_reps=bootstrap,
                stages=switches,
            )
            if loo
            else None
        )
    except (EmbeddingFailedError, ValueError) as exc:
        raise fail(str(exc)) from exc
    _print(results, held_out, datasets, as_json=as_json, all_fixed=all_fixed)


@app.command("stages")
def stages(
    data: DataOpt,
    cache: CacheOpt = Path(DEFAULT_CACHE_DIR),
    bootstrap: BootstrapOpt = BOOTSTRAP_REPS,
    write_model: Annotated[
        Path | None,
        typer.Option(
            "--write-model",
            help="Also train both stages on every query and write the model JSON here "
            "(the package's own: src/kodiai/learning/stages_model.json).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The figures as one JSON object.")] = False,
    provider_name: ProviderOpt = "local",
    voyage_api_key: VoyageKeyOpt = None,
) -> None:
    """Abstention and the second stage (learned ranker) over the first stage's pools, trained and scored
    leave-one-repository-out on the past-fixes track (lexical channel on)."""
    from rich.console import Console

    from kodiai.cli.progress import stage_progress
    from kodiai.evaluation.data import load_dataset
    from kodiai.evaluation.embedding_cache import EmbeddingFailedError
    from kodiai.evaluation.evaluate import evaluate
    from kodiai.evaluation.loo import first_stage_fit
    from kodiai.evaluation.report import stages_tables
    from kodiai.evaluation.runner import ChainOptions
    from kodiai.evaluation.stages import (
        check_chain,
        dataset_queries,
        evaluate_stages,
        stages_json,
        train_shipped,
    )

    dataset, provider = inputs(lambda: load_dataset(data), provider_name, voyage_api_key)
    try:
        with stage_progress() as progress:
            _, pools = evaluate(
                dataset,
                provider,
                cache,
                options=ChainOptions(),
                bootstrap_reps=0,
                on_embedded=progress.report(f"{dataset.name}: embedding with {provider.model}"),
                on_query=progress.report(f"{dataset.name}: queries through the chain"),
            )
        queries = dataset_queries(dataset, pools)
        result = evaluate_stages(queries, first_stage_fit(provider.model), bootstrap_reps=bootstrap)
        checked = check_chain(dataset, provider, cache, queries, first_stage_fit(provider.model))
    except (EmbeddingFailedError, ValueError, RuntimeError) as exc:
        raise fail(str(exc)) from exc
    if write_model is not None:
        shipped = train_shipped(queries, f"{data.name} ({dataset.name}, {provider.model})")
        write_model.write_text(json.dumps(shipped.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")
    if as_json:
        typer.echo(json.dumps({**stages_json(result), "chain_checked": checked}, indent=2))
        return
    console = Console(width=240, soft_wrap=False, highlight=False)
    for table in stages_tables(result):
        console.print(table)
    console.print(
        f"Chain check: the real chain with both stages on kept exactly what the replay kept ({checked} queries)."
    )
    if write_model is not None:
        console.print(f"Model written to {write_model}")


def _print(
    results: dict[str, EvalResult],
    held_out: LooResult | None,
    datasets: list[EvalDataset],
    *,
    as_json: bool,
    all_fixed: bool,
) -> None:
    from rich.console import Console

    from kodiai.evaluation.report import (
        loo_json,
        loo_tables,
        per_repo_table,
        result_table,
        targets_table,
    )
    from kodiai.evaluation.targets import check_targets

    if as_json:
        if held_out is None:
            typer.echo(json.dumps(results[datasets[0].name].to_json(), indent=2, sort_keys=False))
            return
        out = {
            "dev": {name: r.to_json() for name, r in results.items()},
            "loo": loo_json(held_out),
            "targets": [c.model_dump() for c in check_targets(results, held_out)],
        }
        typer.echo(json.dumps(out, indent=2, sort_keys=False))
        return
    console = Console(width=240, soft_wrap=False, highlight=False)
    for result in results.values():
        console.print(result_table(result, all_fixed))
        if len(result.per_repo) > 1:
            console.print(per_repo_table(result))
    if held_out is not None:
        default = next(iter(results.values())).default
        for table in loo_tables(held_out, default):
            console.print(table)
        console.print(targets_table(check_targets(results, held_out)))
