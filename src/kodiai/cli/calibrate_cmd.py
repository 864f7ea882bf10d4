"""`kodiai memory calibrate`: derive a cut profile for the embedder in use from a labelled set.

The labelled set has the format of ``shared/eval-dev``: ``DIR/corpus.jsonl`` + ``DIR/queries.jsonl``
and, when present, the re-review track in ``DIR/rereview/``. The result is printed as YAML for the
``knowledge.retrieval`` section of ``.kodiai.yml`` (both bands, the lexical weight and the recency
margin are real keys); the figures it reached are YAML comments. Whether the procedure generalises is
what ``kodiai eval retrieval --loo`` measures: it runs this same derivation once per left-out repository.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kodiai.cli.eval_cmd import CacheOpt, ProviderOpt, VoyageKeyOpt, fail, min_abstain_option
from kodiai.evaluation.defaults import DEFAULT_CACHE_DIR

if TYPE_CHECKING:
    from kodiai.evaluation.data import EvalDataset


def _tracks(data: Path) -> list[EvalDataset]:
    from kodiai.evaluation.data import REREVIEW_DIR, DataError, load_dataset

    out: list[EvalDataset] = []
    if (data / "queries.jsonl").is_file():
        out.append(load_dataset(data))
    if (data / REREVIEW_DIR / "queries.jsonl").is_file():
        out.append(load_dataset(data, rereview=True))
    if not out:
        raise DataError(f"{data}: no queries.jsonl (nor {REREVIEW_DIR}/queries.jsonl)")
    return out


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def calibrate(
    data: Annotated[
        Path, typer.Option("--data", help="Labelled set (corpus.jsonl/queries.jsonl[, rereview/]).")
    ],
    provider_name: ProviderOpt = "local",
    voyage_api_key: VoyageKeyOpt = None,
    cache: CacheOpt = Path(DEFAULT_CACHE_DIR),
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=20)] = 5,
    max_empty: Annotated[float, typer.Option("--max-empty", min=0.0, max=1.0)] = 0.10,
    min_abstain: Annotated[
        float,
        min_abstain_option(
            "Abstain constraint on the re-review track (on the main track when it is the only one); "
            "0 = off (the default: see docs/retrieval-quality.md for why)."
        ),
    ] = 0.0,
    lexical: Annotated[
        bool, typer.Option("--lexical/--no-lexical", help="Also derive the band with the lexical channel.")
    ] = True,
) -> None:
    """Derive a headgap profile for the embedder from a labelled set; print it as .kodiai.yml YAML."""
    from ruamel.yaml import YAML

    from kodiai.cli.eval_cmd import inputs
    from kodiai.cli.progress import stage_progress
    from kodiai.evaluation.calibration import (
        CalibrationTargets,
        LabelledPool,
        calibration_yaml_keys,
        derive_profile,
        profile_only_keys,
    )
    from kodiai.evaluation.embedding_cache import EmbeddingCache, EmbeddingFailedError
    from kodiai.evaluation.runner import ChainOptions, run_chain
    from kodiai.learning.threshold.profiles import profile_for_model

    tracks, provider = inputs(lambda: _tracks(data), provider_name, voyage_api_key)
    embeddings = EmbeddingCache(cache, provider)
    pools: dict[str, list[LabelledPool]] = {}
    try:
        with stage_progress() as stages:
            for dataset in tracks:
                findings, queries = embeddings.embed_corpus(
                    [f.memory_text() for f in dataset.findings],
                    [q.query_text for q in dataset.queries],
                    stages.report(f"{dataset.name}: embedding with {provider.model}"),
                )
                _, pools[dataset.name] = run_chain(
                    dataset,
                    queries,
                    findings,
                    {},
                    model=provider.model,
                    options=ChainOptions(top_k=top_k, lexical=lexical),
                    on_query=stages.report(f"{dataset.name}: queries through the chain"),
                )
    except (EmbeddingFailedError, ValueError) as exc:
        raise fail(str(exc)) from exc
    targets = CalibrationTargets(
        max_empty=max_empty,
        min_abstain=min_abstain,
        abstain_tracks=frozenset({"rereview"} if "rereview" in pools else set(pools)),
    )
    vector = derive_profile(pools, model=provider.model, top_k=top_k, targets=targets, lexical=False)
    results = [("vector channel", vector)]
    profile = vector.profile
    if lexical and profile_for_model(provider.model).head_lexical_weight > 0:
        fused = derive_profile(pools, model=provider.model, top_k=top_k, targets=targets, lexical=True)
        results.append(("with the lexical channel", fused))
        profile = profile.model_copy(update={"head_lexical_band": fused.profile.head_lexical_band})
    met = all(r.meets_targets for _, r in results)
    lines = [
        f"# kodiai memory calibrate: {provider.model} on {data} "
        f"({', '.join(f'{name} {len(p)} queries' for name, p in pools.items())}); "
        f"{sum(r.candidates_tried for _, r in results)} candidates; targets {'met' if met else 'NOT met'} "
        f"(empty <= {_pct(max_empty)}, abstain >= {_pct(min_abstain)})",
    ]
    for label, result in results:
        for name, m in result.metrics.items():
            lines.append(
                f"# {label}, {name}: F0.5 {m.f0_5:.3f}, precision {m.precision:.3f}, "
                f"recall@5 {m.recall_at_5:.3f}, empty {_pct(m.empty)}, abstain {_pct(m.abstain)}"
            )
    extra = ", ".join(f"{k} {v}" for k, v in profile_only_keys(profile).items())
    if extra:
        lines.append(f"# profile constants .kodiai.yml cannot express: {extra}")
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    buffer = io.StringIO()
    yaml.dump(calibration_yaml_keys(profile, provider.model), buffer)
    typer.echo("\n".join(lines) + "\n" + buffer.getvalue().rstrip("\n"))
