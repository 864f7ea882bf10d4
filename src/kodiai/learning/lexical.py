"""The lexical channel: full-text search (BM25) over each memory's finding text and file path.

The vector channel finds memories that *read* like the PR; this one finds memories whose words and path
segments the PR's retrieval query shares (a file name, a function, an error string), which a small
embedder blurs. It uses LanceDB's native full-text index on the memory table itself (two indexes:
``finding_text`` with English stemming and stop words, ``file_path`` without, since path segments are
identifiers), so there is no second store to keep in step. LanceDB does search rows written after the
index was built, but scores them differently from indexed rows (measured: another top 10 for the same
query), so before searching the channel folds unindexed rows into the index (``table.optimize()``, the
same call the store makes for its vector index); a retrieval right after new memories pays for that once.
With several writers (an object-store memory) searches leave that to the periodic compaction job, so rows
written since its last run are scored as unindexed rows meanwhile.

Scores are raw BM25 and only comparable within one query; :func:`kodiai.learning.threshold.head_gap.head_gap_decide`
normalises each channel within the pool before fusing them. For every vector candidate the channel also
returns its exact BM25 score (a second search restricted to those ids), so no candidate is fused with a
made-up 0; for every lexical hit the vector channel missed it returns the true vector distance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from kodiai.learning.exact_search import rank_exact
from kodiai.learning.memory_schema import (
    RECORD_COLUMNS,
    VECTOR_COLUMN,
    record_from_row,
    sql_int_list,
    sql_string,
    validate_repo,
)
from kodiai.learning.pipeline import LexicalMatches
from kodiai.learning.types import RetrievalResult

_T = TypeVar("_T")

#: The indexed columns and their tokenizers (LanceDB's "simple" tokenizer splits on whitespace and
#: punctuation, so ``src/ctx/pool_reuse.go`` gives src, ctx, pool, reuse, go). The arguments of
#: ``lancedb.index.FTS``: LanceDB is imported when an index is built, not with this module (it costs seconds,
#: and a server without learned memory never needs it).
INDEXES: dict[str, dict[str, Any]] = {
    "finding_text": {"base_tokenizer": "simple", "lower_case": True, "stem": True, "remove_stop_words": True},
    "file_path": {"base_tokenizer": "simple", "lower_case": True, "stem": False, "remove_stop_words": False},
}
MAX_QUERY_CHARS = 2000


class TableAccess(Protocol):
    """What the channel needs from the memory store: its LanceDB table, under the store's lock."""

    def with_table(self, fn: Callable[[Any], _T]) -> _T: ...

    @property
    def multi_writer(self) -> bool:
        """Several processes write the table: a search must not compact it (the periodic job does)."""
        ...


def ensure_fts_indexes(table: Any) -> list[str]:
    """Create the missing full-text indexes on ``table``; returns the columns indexed now."""
    from lancedb.index import FTS

    present = {col for idx in table.list_indices() if idx.index_type == "FTS" for col in idx.columns}
    created: list[str] = []
    for column, config in INDEXES.items():
        if column not in present:
            table.create_index(column, config=FTS(**config))
            created.append(column)
    return created


def unindexed_rows(table: Any) -> int:
    """Rows the full-text indexes do not cover yet (0 when there is no full-text index)."""
    total = 0
    for idx in table.list_indices():
        if idx.index_type == "FTS":
            stats = table.index_stats(idx.name)
            total = max(total, int(stats.num_unindexed_rows) if stats is not None else 0)
    return total


def fold_unindexed(table: Any) -> bool:
    """Bring the full-text indexes up to date with the table; True when there was something to fold."""
    if unindexed_rows(table) == 0:
        return False
    table.optimize()
    return True


def _search(table: Any, text: str, where: str, limit: int) -> Any:
    from lancedb.query import FullTextOperator, MultiMatchQuery

    return (
        table.search(
            MultiMatchQuery(text, list(INDEXES), boosts=None, operator=FullTextOperator.OR), query_type="fts"
        )
        .where(where, prefilter=True)
        .select([*RECORD_COLUMNS, VECTOR_COLUMN, "_score"])
        .limit(limit)
        .to_arrow()
    )


class LexicalChannel:
    """BM25 over one store's memories of one repository (live rows only), for :func:`retrieve_context`."""

    def __init__(self, store: TableAccess) -> None:
        self._store = store
        self._ready = False

    def ensure_index(self) -> list[str]:
        """Create the full-text indexes if the table lacks them (cheap once they exist)."""
        created = self._store.with_table(ensure_fts_indexes)
        self._ready = True
        return created

    def match(
        self,
        query_text: str,
        query_embedding: Sequence[float] | np.ndarray,
        *,
        repo: str,
        limit: int,
        known: Sequence[int],
    ) -> LexicalMatches:
        """The top ``limit`` lexical hits of ``repo`` and the scores of the ``known`` (vector) candidates."""
        validate_repo(repo)
        text = " ".join(query_text.split())[:MAX_QUERY_CHARS]
        if not text or limit <= 0:
            return LexicalMatches(scores={}, extra=[])
        if not self._ready:
            self.ensure_index()
        where = f"repo = {sql_string(repo)} AND stale = false"
        query = np.asarray(query_embedding, dtype=np.float32)

        fold = not self._store.multi_writer

        def run(table: Any) -> tuple[Any, Any]:
            if fold:
                fold_unindexed(table)
            top = _search(table, text, where, limit)
            found = set(top.column("id").to_pylist())
            rest = [i for i in known if i not in found]
            scored = (
                _search(table, text, f"{where} AND id IN ({sql_int_list(rest)})", len(rest)) if rest else None
            )
            return top, scored

        top, scored = self._store.with_table(run)
        scores: dict[int, float] = {}
        for table in (top, scored):
            if table is not None:
                for memory_id, score in zip(
                    table.column("id").to_pylist(), table.column("_score").to_pylist(), strict=True
                ):
                    scores[int(memory_id)] = float(score)
        known_ids = set(known)
        rows = [row for row in top.to_pylist() if int(row["id"]) not in known_ids]
        extra: list[RetrievalResult] = []
        if rows:
            ids = np.array([int(r["id"]) for r in rows], dtype=np.int64)
            vectors = np.array([r[VECTOR_COLUMN] for r in rows], dtype=np.float32)
            by_id = {int(r["id"]): r for r in rows}
            for hit in rank_exact(ids, vectors, query, len(rows)):
                record = record_from_row(by_id[hit.memory_id])
                extra.append(
                    RetrievalResult(
                        memory_id=hit.memory_id,
                        distance=hit.distance,
                        record=record,
                        source_repo=record.source_repo,
                    )
                )
        return LexicalMatches(scores=scores, extra=extra)
