"""Language-aware rerank of retrieval results (behaviour R2.22).

A memory about a file in one of the PR's languages is pulled closer (×0.85), one in another known
language is pushed away (×1.15), and an unknown language is left alone (×1.0).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from kodiai.learning.types import RerankedResult, RetrievalResult
from kodiai.text.languages import UNKNOWN_LANGUAGE, classify_file_language


class RerankConfig(BaseModel):
    """Multipliers applied to the distance; the defaults are the original's."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    same_language_boost: float = 0.85
    cross_language_penalty: float = 1.15


DEFAULT_RERANK_CONFIG = RerankConfig()


def rerank_by_language(
    results: Sequence[RetrievalResult],
    pr_languages: Iterable[str],
    config: RerankConfig | dict[str, float] | None = None,
) -> list[RerankedResult]:
    """New list sorted by ``adjusted_distance`` ascending (stable); the input is not mutated."""
    cfg = config if isinstance(config, RerankConfig) else RerankConfig.model_validate(config or {})
    languages = set(pr_languages)
    reranked: list[RerankedResult] = []
    for result in results:
        language = classify_file_language(result.record.file_path)
        if language == UNKNOWN_LANGUAGE:
            factor, match = 1.0, False
        elif language in languages:
            factor, match = cfg.same_language_boost, True
        else:
            factor, match = cfg.cross_language_penalty, False
        reranked.append(
            RerankedResult(
                memory_id=result.memory_id,
                distance=result.distance,
                record=result.record,
                source_repo=result.source_repo,
                adjusted_distance=result.distance * factor,
                language_match=match,
            )
        )
    reranked.sort(key=lambda r: r.adjusted_distance)
    return reranked
