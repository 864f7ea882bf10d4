"""One evaluation end to end: data → cached embeddings → the chain per strategy → metrics per strategy."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from kodiai.learning.calibration import (
    SCALE_FREE_DEFAULT,
    LabelledPool,
    profile_for_model,
    resolve_cut,
    resolve_profile,
)
from kodiai.learning.cut_strategy import FixedCut, NamedCut
from kodiai.learning.embeddings import EmbeddingProvider
from kodiai.learning.evaluation.data import EvalDataset
from kodiai.learning.evaluation.embedding_cache import EmbeddingCache
from kodiai.learning.evaluation.metrics import StrategyMetrics, aggregate
from kodiai.learning.evaluation.runner import ChainOptions, run_chain

# 0.20 … 1.20 by 0.05: the 0.2…0.9, extended because MiniLM's relevant distances reach ~1.0.
FIXED_THRESHOLDS: tuple[float, ...] = tuple(round(0.2 + 0.05 * i, 2) for i in range(21))
DEFAULT_KEY = "default"
BEST_FIXED_KEY = "fixed:best"


class EvalResult(BaseModel):
    """Metrics per strategy name; ``default`` is the resolved default strategy's name."""

    model_config = ConfigDict(frozen=True)

    track: str
    model: str
    options: ChainOptions
    default: str
    strategies: dict[str, StrategyMetrics]
    best_fixed: str | None

    def to_json(self) -> dict[str, Any]:
        """One object keyed by strategy name; ``"default"`` repeats the default strategy's entry and
        ``"fixed:best"`` the best fixed threshold in hindsight (by F0.5), each naming its strategy."""
        out: dict[str, Any] = {
            name: {"strategy": name, **m.model_dump()} for name, m in self.strategies.items()
        }
        out[DEFAULT_KEY] = {**out[self.default], "track": self.track, "model": self.model}
        if self.best_fixed is not None:
            out[BEST_FIXED_KEY] = {
                **out[self.best_fixed],
                "threshold": float(self.best_fixed.split(":", 1)[1]),
            }
        return out


def build_strategies(
    model: str,
    *,
    cut_strategy: str | None = None,
    calibration: Mapping[str, Any] | BaseModel | None = None,
    fixed: tuple[float, ...] = FIXED_THRESHOLDS,
) -> tuple[dict[str, NamedCut], str]:
    """The strategies compared, and the name of the default among them.

    ``maxgap`` and ``headgap`` use the model's profile (with the config's calibration keys); the
    scale-free default profile is added as ``headgap:scale-free`` when the model has its own profile.
    """
    profile = resolve_profile(model, calibration)
    strategies: dict[str, NamedCut] = {
        "maxgap": profile.cut("maxgap"),
        "headgap": profile.cut("headgap"),
    }
    if profile_for_model(model) is not SCALE_FREE_DEFAULT:
        strategies["headgap:scale-free"] = SCALE_FREE_DEFAULT.cut("headgap")
    for t in fixed:
        cut = FixedCut(t)
        strategies[cut.name] = cut
    default = resolve_cut(model, cut_strategy, calibration)
    return strategies, default.name


def evaluate(
    dataset: EvalDataset,
    provider: EmbeddingProvider,
    cache_dir: str | Path,
    *,
    options: ChainOptions | None = None,
    cut_strategy: str | None = None,
    calibration: Mapping[str, Any] | BaseModel | None = None,
    on_query: Callable[[int, int], None] | None = None,
) -> tuple[EvalResult, list[LabelledPool]]:
    """Embed (cached), run every strategy through the real chain, aggregate."""
    opts = options or ChainOptions()
    cache = EmbeddingCache(cache_dir, provider)
    finding_vectors = cache.embed([f.memory_text() for f in dataset.findings], "document")
    query_vectors = cache.embed([q.query_text for q in dataset.queries], "query")
    strategies, default = build_strategies(provider.model, cut_strategy=cut_strategy, calibration=calibration)
    judgements, pools = run_chain(
        dataset,
        query_vectors,
        finding_vectors,
        strategies,
        model=provider.model,
        options=opts,
        on_query=on_query,
    )
    metrics = {name: aggregate(js) for name, js in judgements.items()}
    fixed = [name for name in metrics if name.startswith("fixed:")]
    best = max(fixed, key=lambda n: metrics[n].f0_5) if fixed else None
    result = EvalResult(
        track=dataset.name,
        model=provider.model,
        options=opts,
        default=default,
        strategies=metrics,
        best_fixed=best,
    )
    return result, pools
