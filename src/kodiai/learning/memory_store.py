"""Learned memory on LanceDB: writes, repo-isolated vector search, staleness (behaviour R2.26, behaviour P6.3).

Any LanceDB URI works (a local directory by default, object storage unchanged). Every search is
pre-filtered on the repo and on ``stale = false``; distances are Euclidean L2 between the stored unit
vectors (LanceDB's ``l2`` is the *squared* distance, so the store recomputes the true distance in
float64 from the returned vectors), which keeps the original's 0.3 / 0.15 / 0.65 thresholds meaningful.
A repo with at most ``exact_search_max_rows`` live memories is searched exactly over its vectors held
in memory; above that an in-memory faiss index answers whose structure (IVF-Flat, HNSW, or the exact scan)
and search breadth were chosen by measuring recall when it was built (:mod:`kodiai.learning.ann_index`),
with LanceDB's own ANN index (IVF_HNSW_SQ by default, built by :meth:`LanceMemoryStore.ensure_index` as the
table grows) standing in while a repo's faiss index is being built or when it does not fit the cache.
Writes and retirements update the cached indexes in place.
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

import numpy as np
from pydantic import BaseModel

from kodiai.learning.ann_index import AnnIndex, IndexReport, build_calibrated, needs_recalibration
from kodiai.learning.exact_search import ExactIndex
from kodiai.learning.memory_index import (
    MemoryStoreOptions,
    add_missing_scalar_indexes,
    build_indexes,
    has_vector_index,
    lance_search,
    load_ids,
    load_vectors,
    unindexed_rows,
)
from kodiai.learning.memory_schema import (
    TABLE_NAME,
    as_vector,
    memory_schema,
    record_from_row,
    rows_table,
    sql_int_list,
    sql_string,
    validate_owner,
    validate_repo,
    vector_dimensions,
)
from kodiai.learning.object_store import is_remote
from kodiai.learning.table_create import open_or_create
from kodiai.learning.types import LearningMemoryRecord, MemoryHit
from kodiai.learning.vector_cache import RepoIndex, VectorCache
from kodiai.log import get_logger
from kodiai.storage.write_health import WriteHealth, local_directory, reports_writes

OWNER_POOL_REPOS = 5

_F = TypeVar("_F", bound=Callable[..., Any])
BuildObserver = Callable[[str, IndexReport], None]
"""Called with ``(repo, report)`` after each in-memory index build above the exact limit."""


def _locked(method: _F) -> _F:
    """Run a store method under the store's lock."""

    @functools.wraps(method)
    def wrapper(self: LanceMemoryStore, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return cast(_F, wrapper)


_SQLITE_TIME = "%Y-%m-%d %H:%M:%S"
_PRIMARY_KEY = b"lance-schema:unenforced-primary-key"
"""Field metadata marking ``id`` as a multi-writer table's primary key: LanceDB then detects (and retries) a
``merge_insert`` whose new keys a concurrent commit inserted, so two processes writing one memory store one row."""
MIN_KEEP_VERSIONS = timedelta(hours=1)
"""Compaction never removes versions younger than this: they are what concurrent readers are reading."""


def content_id(record: LearningMemoryRecord) -> int:
    """A memory's id in a multi-writer table: 63 bits of a hash of its uniqueness key ``(repo, finding_id,
    outcome)``, so every process writing the same memory picks the same id; a memory without a finding id is
    never a duplicate and gets a random one. Collisions between different keys: ~n²/2⁶⁴ (none in practice)."""
    if record.finding_id is None:
        key = f"random\0{uuid.uuid4().hex}"
    else:
        key = f"{record.repo}\0{int(record.finding_id)}\0{record.outcome}"
    value = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") >> 1
    return value or 1


__all__ = ["LanceMemoryStore", "MemoryStats", "MemoryStoreOptions", "open_memory_store"]


class MemoryStats(BaseModel):
    """Counts for ``kodiai memory stats``."""

    total: int
    stale: int
    dimensions: int
    by_repo: dict[str, int]
    by_model: dict[str, int]
    indexed: bool
    by_repo_outcome: dict[str, dict[str, int]] = {}
    """Live (non-stale) memories per repo and outcome (accepted, suppressed, thumbs_up, thumbs_down)."""
    ann: dict[str, IndexReport] = {}
    """How the in-memory index of each repo above the exact limit was chosen (structure, breadth,
    measured recall@20, build time), for the indexes this process holds."""


class LanceMemoryStore:
    """The learned-memory store. Construct with :func:`open_memory_store`."""

    def __init__(
        self,
        table: Any,
        dimensions: int,
        options: MemoryStoreOptions,
        clock: Callable[[], datetime],
        write_health: WriteHealth | None = None,
    ) -> None:
        self.write_health = write_health or WriteHealth("memory", None)
        """Whether writes land (``/readiness``); the write methods below report to it."""
        self._table = table
        self._dimensions = dimensions
        self._options = options
        self._clock = clock
        self._log = get_logger("kodiai.learning.memory_store")
        self._multi = options.multi_writer
        # One writer: ids counted up in-process (1, 2, 3… as the original). Several: content-key ids.
        self._next_id = 0 if self._multi else self._max_id() + 1
        self._version = self._table_version()
        """The table version the caches below reflect (multi-writer: compared at each refresh)."""
        self._checked_at = time.monotonic()
        self._repo_counts: dict[str, int] = {}
        self._owner_repos: dict[str, Counter[str]] = {}
        self._writes_since_check = 0
        self._has_index: bool | None = None
        self._scalars_checked = False
        """Whether this process made sure an indexed table has every scalar index (``ensure_index``)."""
        self._keys: set[tuple[str, int | None, str]] | None = None
        self._vectors = VectorCache(options.vector_cache_bytes)
        self._building: set[str] = set()
        #: Test seam, None in production: called by :meth:`warm` on its own thread, without the lock,
        #: with the repo whose index was just built from its snapshot, before the writes and retirements
        #: made meanwhile are reconciled into it. A test blocks in it to overlap writes with a build.
        self.warm_built_hook: Callable[[str], None] | None = None
        self._reports: dict[str, IndexReport] = {}
        self._observers: list[BuildObserver] = []
        # Handlers may call from several threads; the caches and id counter are guarded by one lock.
        self._lock = threading.RLock()

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def multi_writer(self) -> bool:
        """Several processes write this table (content-key ids, refreshes, compaction by one job only)."""
        return self._multi

    # ---- writes -----------------------------------------------------------------------------------

    def write_memory(
        self, record: LearningMemoryRecord, embedding: Sequence[float] | np.ndarray
    ) -> int | None:
        """Store one memory; returns its id, or None when ``(repo, finding_id, outcome)`` already exists."""
        return self.write_memories([record], [embedding])[0]

    @reports_writes
    @_locked
    def write_memories(
        self,
        records: Sequence[LearningMemoryRecord],
        embeddings: Sequence[Sequence[float] | np.ndarray] | np.ndarray,
    ) -> list[int | None]:
        """Store a batch; each position gets the new id or None for a skipped duplicate.

        Validation (names, vector sizes) happens for the whole batch before anything is written, so a bad
        row loses nothing and writes nothing. A null ``finding_id`` never counts as a duplicate (as in the
        original, where NULL never violates UNIQUE).
        """
        if len(records) != len(embeddings):
            raise ValueError(f"{len(records)} records but {len(embeddings)} embeddings")
        if not records:
            return []
        vectors = np.stack([as_vector(e, self._dimensions) for e in embeddings])
        for record in records:
            validate_repo(record.repo)
            validate_owner(record.owner)
        self._maybe_refresh()
        existing = self._existing_keys()
        pending: set[tuple[str, int | None, str]] = set()
        now_text = self._clock().astimezone(UTC).strftime(_SQLITE_TIME)
        out: list[int | None] = []
        keep_rows: list[int] = []
        new_records: list[LearningMemoryRecord] = []
        for i, record in enumerate(records):
            key = (record.repo, record.finding_id, record.outcome)
            if record.finding_id is not None and (key in existing or key in pending):
                self._log.debug(
                    "Duplicate memory write skipped", repo=record.repo, finding_id=record.finding_id
                )
                out.append(None)
                continue
            if record.finding_id is not None:
                pending.add(key)
            if self._multi:
                memory_id = content_id(record)
            else:
                memory_id = self._next_id
                self._next_id += 1
            out.append(memory_id)
            keep_rows.append(i)
            new_records.append(
                record.model_copy(update={"id": memory_id, "created_at": record.created_at or now_text})
            )
        if new_records:
            ids = [r.id for r in new_records if r.id is not None]
            rows = rows_table(new_records, ids, vectors[keep_rows], self._dimensions)
            if self._multi:
                self._merge_rows(rows)
            else:
                try:
                    self._table.add(rows)
                except BaseException:
                    self._next_id -= len(new_records)
                    raise
                self._own_commit(self._version)
            existing |= pending
            self._cache_added(new_records, vectors[keep_rows])
            self._writes_since_check += len(new_records)
            if (
                not self._multi  # several writers: one periodic job compacts (memory_compaction)
                and self._writes_since_check >= self._options.index_check_every
                and not self.ensure_index()
            ):
                # Single writes leave one small fragment each; compact them (and fold rows into indexes).
                self._table.optimize()
        return out

    def _merge_rows(self, rows: Any) -> None:
        """Insert the rows whose id is not stored yet (several writers): a memory written by two processes
        at once is stored once, with the same id in both (its content key's)."""
        before = self._version
        rows = rows.cast(self._table.schema)  # the table's field metadata (the primary key) included
        for attempt in range(_MERGE_ATTEMPTS):
            try:
                self._table.merge_insert("id").when_not_matched_insert_all().execute(rows)
                break
            except Exception as exc:
                # Insert-only on the id: a retry after a failed commit inserts nothing twice.
                if attempt + 1 == _MERGE_ATTEMPTS or not _is_commit_conflict(exc):
                    raise
                self._log.info("Memory write conflicted with another writer; retrying", attempt=attempt + 1)
                self._table.checkout_latest()
                before = -1  # the caches no longer reflect the table: the next refresh reconciles them
                time.sleep(0.05 * (attempt + 1))
        self._own_commit(before)

    def _table_version(self) -> int:
        return int(self._table.version)

    def _own_commit(self, before: int) -> None:
        """After one commit of this process: the caches still reflect the table unless another writer
        committed in between (then the next refresh, due now, reconciles them)."""
        after = self._table_version()
        if self._version == before and after == before + 1:
            self._version = after
        elif self._multi:
            self._checked_at = -math.inf

    def _maybe_refresh(self) -> None:
        """Several writers: every ``refresh_seconds``, move the table handle to the newest version and bring
        the caches (live counts, duplicate keys, each cached repo's vectors) up to it. Called under the lock."""
        if not self._multi or time.monotonic() - self._checked_at < self._options.refresh_seconds:
            return
        with self._lock:
            self._refresh()

    def _refresh(self) -> None:
        self._table.checkout_latest()
        self._checked_at = time.monotonic()
        latest = self._table_version()
        if latest == self._version:
            return
        self._keys = None
        self._repo_counts.clear()
        self._owner_repos.clear()
        self._has_index = None
        limit = self._options.exact_search_max_rows
        for repo in self._vectors.repos():
            entry = self._vectors.peek(repo)
            if entry is None:
                continue
            if entry.kind == "exact" and self._repo_count(repo) > limit:
                self._vectors.pop(repo)  # outgrew exact search: the next query builds its ANN index
            elif self._outgrew_calibration(repo, self._repo_count(repo)):
                self._vectors.pop(repo)
            else:
                self._sync_entry(repo, entry, entry.live_ids())
        self._version = latest

    def _sync_entry(self, repo: str, entry: RepoIndex, known: np.ndarray) -> None:
        """Bring a cached repo index holding ``known`` ids up to the table's live rows of ``repo``."""
        where = _live_where(repo)
        live = load_ids(self._table, where)
        gone = np.setdiff1d(known, live, assume_unique=True)
        new = np.setdiff1d(live, known, assume_unique=True)
        if len(gone):
            entry.remove(gone)
        if len(new):
            new_ids, new_matrix = load_vectors(
                self._table, f"{where} AND id IN ({sql_int_list(new.tolist())})", self._dimensions
            )
            entry.add(new_ids, new_matrix)

    def _existing_keys(self) -> set[tuple[str, int | None, str]]:
        """The uniqueness keys already stored (kept in memory after one scan: one writer per store)."""
        if self._keys is None:
            rows = self._table.search().select(["repo", "finding_id", "outcome"]).to_arrow()
            self._keys = {
                (repo, finding_id, outcome)
                for repo, finding_id, outcome in zip(
                    rows.column("repo").to_pylist(),
                    rows.column("finding_id").to_pylist(),
                    rows.column("outcome").to_pylist(),
                    strict=True,
                )
                if finding_id is not None
            }
        return self._keys

    # ---- reads ------------------------------------------------------------------------------------

    @_locked
    def retrieve_memories(
        self, query_embedding: Sequence[float] | np.ndarray, repo: str, top_k: int
    ) -> list[MemoryHit]:
        """The ``top_k`` nearest live memories of ``repo``, nearest first (ties by id)."""
        validate_repo(repo)
        if top_k <= 0:
            return []
        self._maybe_refresh()
        query = as_vector(query_embedding, self._dimensions)
        where = _live_where(repo)
        count = self._repo_count(repo)
        if count == 0:
            return []
        entry = self._repo_index(repo, count)
        if entry is not None:
            return entry.search(query, top_k)
        exact = count <= self._options.exact_search_max_rows
        return lance_search(
            self._table, query, where, top_k, self._options, use_index=not exact and self._indexed()
        )

    @_locked
    def retrieve_review_memories(
        self,
        query_embedding: Sequence[float] | np.ndarray,
        repo: str,
        review_ids: Sequence[int],
        top_k: int,
    ) -> list[MemoryHit]:
        """The ``top_k`` nearest live memories of ``repo`` written by one of ``review_ids`` (the re-review
        scope), nearest first: an exact scan of those rows only, so it does not depend on the vector pool."""
        validate_repo(repo)
        if top_k <= 0 or not review_ids:
            return []
        self._maybe_refresh()
        query = as_vector(query_embedding, self._dimensions)
        where = f"{_live_where(repo)} AND review_id IN ({sql_int_list(review_ids)})"
        return lance_search(self._table, query, where, top_k, self._options, use_index=False)

    @_locked
    def retrieve_memories_for_owner(
        self, query_embedding: Sequence[float] | np.ndarray, owner: str, exclude_repo: str, top_k: int
    ) -> list[MemoryHit]:
        """The owner's shared pool: its 5 other repos with most live memories (ties by name), then
        ``max(1, ceil(top_k / repos))`` from each, merged, de-duplicated, sorted, cut to ``top_k``."""
        validate_owner(owner)
        validate_repo(exclude_repo)
        if top_k <= 0:
            return []
        self._maybe_refresh()
        query = as_vector(query_embedding, self._dimensions)
        counts = self._owner_repo_counts(owner)
        ranked = sorted((r for r in counts if r != exclude_repo), key=lambda r: (-counts[r], r))
        repos = ranked[:OWNER_POOL_REPOS]
        if not repos:
            return []
        per_repo_k = max(1, math.ceil(top_k / len(repos)))
        merged: dict[int, MemoryHit] = {}
        for repo in repos:
            try:
                hits = self.retrieve_memories(query, repo, per_repo_k)
            except Exception as exc:  # one bad partition must not sink the pool (as the original)
                self._log.debug("Owner pool repo query failed; skipped", repo=repo, error=str(exc))
                continue
            for hit in hits:
                merged.setdefault(hit.memory_id, hit)
        return sorted(merged.values(), key=lambda h: (h.distance, h.memory_id))[:top_k]

    def _repo_index(self, repo: str, count: int) -> RepoIndex | None:
        """The repo's in-memory index, loaded (and, above the exact limit, built) on first use; None
        when LanceDB must answer (cache off, too big, the ``lance`` engine, or a build in progress)."""
        entry = self._vectors.get(repo)
        if entry is not None:
            return entry
        exact = count <= self._options.exact_search_max_rows
        if repo in self._building or (not exact and self._options.ann_engine != "faiss"):
            return None
        if not self._vectors.fits(count * (self._dimensions * 4 + 24)):
            return None
        ids, matrix = load_vectors(self._table, _live_where(repo), self._dimensions)
        if len(ids) == 0:
            return None
        entry, report = self._new_index(repo, ids, matrix)
        self._put(repo, entry, report)
        return entry

    def _new_index(
        self, repo: str, ids: np.ndarray, matrix: np.ndarray
    ) -> tuple[RepoIndex, IndexReport | None]:
        """The exact scan up to the limit; above it the calibrated index (or, with ``ann_calibrate``
        off, IVF-Flat at ``ann_nprobe``) and its report, logged once per build."""
        options = self._options
        if len(ids) <= options.exact_search_max_rows or options.ann_engine != "faiss":
            return ExactIndex(ids, matrix), None
        if options.ann_calibrate:
            entry, report = build_calibrated(ids, matrix, options)
        else:
            started = time.perf_counter()
            ivf = AnnIndex(ids, matrix, nprobe=options.ann_nprobe, lists=options.ann_lists)
            entry, report = (
                ivf,
                IndexReport(
                    structure="ivf",
                    rows=len(ids),
                    nprobe=ivf.nprobe,
                    lists=ivf.lists,
                    build_seconds=round(time.perf_counter() - started, 2),
                ),
            )
        self._log.info(
            "Learning memory index built",
            repo=repo,
            rows=report.rows,
            setting=report.setting,
            recall=report.recall,
            p50_ms=report.p50_ms,
            exact_p50_ms=report.exact_p50_ms,
            seconds=report.build_seconds,
        )
        return entry, report

    def _put(self, repo: str, entry: RepoIndex, report: IndexReport | None) -> None:
        """Cache a built index and tell the observers (their failures are logged, never raised)."""
        self._vectors.put(repo, entry)
        if report is None:
            self._reports.pop(repo, None)
            return
        self._reports[repo] = report
        for observer in self._observers:
            self._notify(observer, repo, report)

    def _notify(self, observer: BuildObserver, repo: str, report: IndexReport) -> None:
        try:
            observer(repo, report)
        except Exception as exc:
            self._log.warning("Index build observer failed", error=f"{type(exc).__name__}: {exc}")

    @_locked
    def observe_builds(self, observer: BuildObserver) -> None:
        """Call ``observer(repo, report)`` after every in-memory index build above the exact limit,
        starting with the indexes already built (so attaching after the start-up warm misses none)."""
        self._observers.append(observer)
        for repo, report in self._index_reports().items():
            self._notify(observer, repo, report)

    def _index_reports(self) -> dict[str, IndexReport]:
        """Reports of the indexes still cached (an evicted repo's report is dropped)."""
        return {r: rep for r, rep in sorted(self._reports.items()) if self._vectors.peek(r) is not None}

    def warm(self, repos: Sequence[str] | None = None) -> list[str]:
        """Build the in-memory faiss index of each repo above the exact limit (all such repos by
        default) without holding up queries: they are answered by LanceDB meanwhile, and writes or
        retirements made during the build are reconciled before the index is used. Returns the repos
        built. Meant for a background thread at start-up and after large imports."""
        if self._options.ann_engine != "faiss" or self._options.vector_cache_bytes <= 0:
            return []
        with self._lock:
            if repos is None:
                live = self._table.search().where("stale = false").select(["repo"]).to_arrow()
                counts = Counter(live.column("repo").to_pylist())
                repos = sorted(r for r, c in counts.items() if c > self._options.exact_search_max_rows)
            todo = [r for r in repos if r not in self._building and self._vectors.peek(r) is None]
            todo = [
                validate_repo(r) for r in todo if self._repo_count(r) > self._options.exact_search_max_rows
            ]
            self._building.update(todo)
        built: list[str] = []
        try:
            for repo in todo:
                if self._warm_one(repo):
                    built.append(repo)
        finally:
            with self._lock:
                self._building.difference_update(todo)
        return built

    def _warm_one(self, repo: str) -> bool:
        where = _live_where(repo)
        ids, matrix = load_vectors(self._table, where, self._dimensions)
        if not self._vectors.fits(matrix.nbytes) or len(ids) == 0:
            self._log.info("Repo memories not cached (too big or empty)", repo=repo, rows=len(ids))
            return False
        entry, report = self._new_index(repo, ids, matrix)
        del matrix
        if self.warm_built_hook is not None:
            self.warm_built_hook(repo)
        with self._lock:
            self._sync_entry(repo, entry, ids)
            self._put(repo, entry, report)
        return True

    @_locked
    def has_memory(self, repo: str, finding_id: int, outcome: str) -> bool:
        """Whether ``(repo, finding_id, outcome)`` is stored (lets a caller skip embedding a duplicate)."""
        self._maybe_refresh()
        return (repo, int(finding_id), outcome) in self._existing_keys()

    def list_records(self, repo: str | None = None) -> list[LearningMemoryRecord]:
        """Every stored record (without vectors), optionally of one repo, by id."""
        self._maybe_refresh()
        query = self._table.search()
        if repo is not None:
            query = query.where(f"repo = {sql_string(validate_repo(repo))}")
        rows = query.select(list(memory_schema(self._dimensions).names[:-1])).to_arrow().to_pylist()
        return sorted((record_from_row(row) for row in rows), key=lambda r: r.id or 0)

    def get_memory_record(self, memory_id: int) -> LearningMemoryRecord | None:
        return self.get_memory_records([memory_id]).get(int(memory_id))

    def get_memory_records(self, memory_ids: Sequence[int]) -> dict[int, LearningMemoryRecord]:
        """Records by id (missing ids are absent from the result)."""
        if not memory_ids:
            return {}
        self._maybe_refresh()
        rows = (
            self._table.search()
            .where(f"id IN ({sql_int_list(memory_ids)})")
            .select(list(memory_schema(self._dimensions).names[:-1]))
            .to_arrow()
            .to_pylist()
        )
        return {int(row["id"]): record_from_row(row) for row in rows}

    # ---- maintenance ------------------------------------------------------------------------------

    @reports_writes
    @_locked
    def mark_stale(self, embedding_model: str) -> int:
        """Flag live rows written by any other model; returns how many were flagged."""
        result = self._table.update(
            where=f"stale = false AND embedding_model != {sql_string(embedding_model)}",
            values={"stale": True},
        )
        self._invalidate()
        return int(result.rows_updated)

    @reports_writes
    @_locked
    def purge_stale_embeddings(self) -> int:
        """Delete stale rows (with their vectors); returns the number deleted."""
        count = int(self._table.count_rows("stale = true"))
        if count:
            self._table.delete("stale = true")
            self._keys = None  # stale rows are in no cached index or live count
        return count

    @reports_writes
    @_locked
    def retire(self, repo: str, finding_id: int, outcome: str | None = None) -> int:
        """Remove one finding's memories from ``repo`` (all outcomes unless one is named)."""
        validate_repo(repo)
        where = f"repo = {sql_string(repo)} AND finding_id = {int(finding_id)}"
        if outcome is not None:
            where += f" AND outcome = {sql_string(outcome)}"
        ids = load_ids(self._table, where)
        if len(ids):
            self._table.delete(where)
            self._keys = None
            self._repo_counts.pop(repo, None)
            self._owner_repos.clear()
            entry = self._vectors.peek(repo)
            if entry is not None:
                entry.remove(ids)
        return len(ids)

    def count(self, repo: str | None = None) -> int:
        self._maybe_refresh()
        if repo is None:
            return int(self._table.count_rows())
        return int(self._table.count_rows(f"repo = {sql_string(validate_repo(repo))}"))

    def stats(self) -> MemoryStats:
        self._maybe_refresh()
        rows = self._table.search().select(["repo", "embedding_model", "stale", "outcome"]).to_arrow()
        repos = Counter(rows.column("repo").to_pylist())
        models = Counter(rows.column("embedding_model").to_pylist())
        stale_flags = rows.column("stale").to_pylist()
        stale = sum(1 for s in stale_flags if s)
        outcomes: dict[str, Counter[str]] = {}
        for repo, outcome, is_stale in zip(
            rows.column("repo").to_pylist(), rows.column("outcome").to_pylist(), stale_flags, strict=True
        ):
            if not is_stale:
                outcomes.setdefault(repo, Counter())[outcome] += 1
        return MemoryStats(
            total=rows.num_rows,
            stale=stale,
            dimensions=self._dimensions,
            by_repo=dict(sorted(repos.items(), key=lambda kv: (-kv[1], kv[0]))),
            by_model=dict(sorted(models.items())),
            indexed=self._indexed(),
            by_repo_outcome={repo: dict(sorted(c.items())) for repo, c in sorted(outcomes.items())},
            ann=self._index_reports(),
        )

    @reports_writes
    @_locked
    def ensure_index(self, *, force: bool = False) -> bool:
        """Build the ANN index once the table outgrows exact search; fold new rows into it later.

        Returns True when an index was built or updated. ``force`` builds even on a small table.
        """
        self._writes_since_check = 0
        total = int(self._table.count_rows())
        if not force and total <= self._options.exact_search_max_rows:
            return False
        if not self._indexed():
            repos = self._table.search().where("stale = false").select(["repo"]).to_arrow().column("repo")
            largest = max(Counter(repos.to_pylist()).values(), default=0)
            if not force and largest <= self._options.exact_search_max_rows:
                return False  # every repo is searched exactly: an index would never be used
            build_indexes(self._table, self._dimensions, total, self._options)
            self._has_index = self._scalars_checked = True
            return True
        if not self._scalars_checked:  # a table indexed by an older version may lack one (review_id)
            self._scalars_checked = True
            if add_missing_scalar_indexes(self._table):
                return True
        # Unindexed rows are scanned exactly next to the index, so a few are cheap; fold them in later.
        unindexed = unindexed_rows(self._table)
        if unindexed > max(
            self._options.reindex_unindexed_share * total, self._options.exact_search_max_rows / 2
        ):
            self._table.optimize()
            return True
        return False

    @reports_writes
    @_locked
    def compact(self, keep_versions: timedelta) -> None:
        """Fold small fragments together, fold new rows into the indexes, and delete table versions older
        than ``keep_versions`` (at least :data:`MIN_KEEP_VERSIONS`: a concurrent reader may be reading one).
        With several writers only one periodic job calls this (:mod:`kodiai.learning.memory_compaction`)."""
        if keep_versions < MIN_KEEP_VERSIONS:
            raise ValueError(f"keep_versions must be at least {MIN_KEEP_VERSIONS}, got {keep_versions}")
        if self._multi:
            self._refresh()
        self.ensure_index()
        self._table.optimize(cleanup_older_than=keep_versions)

    def close(self) -> None:
        """Stop the write-health probe; LanceDB itself holds no open connection."""
        self.write_health.close()

    @_locked
    def with_table(self, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn`` on the LanceDB table under the store's lock: the lexical channel's full-text
        search and index upkeep (:mod:`kodiai.learning.lexical`)."""
        return fn(self._table)

    # ---- internals --------------------------------------------------------------------------------

    def _indexed(self) -> bool:
        if self._has_index is None:
            self._has_index = has_vector_index(self._table)
        return self._has_index

    def _max_id(self) -> int:
        ids = self._table.search().select(["id"]).to_arrow().column("id")
        return int(max(ids.to_pylist(), default=0))

    def _repo_count(self, repo: str) -> int:
        if repo not in self._repo_counts:
            self._repo_counts[repo] = int(self._table.count_rows(_live_where(repo)))
        return self._repo_counts[repo]

    def _owner_repo_counts(self, owner: str) -> Counter[str]:
        if owner not in self._owner_repos:
            rows = (
                self._table.search()
                .where(f"owner = {sql_string(owner)} AND stale = false")
                .select(["repo"])
                .to_arrow()
            )
            self._owner_repos[owner] = Counter(rows.column("repo").to_pylist())
        return self._owner_repos[owner]

    def _cache_added(self, records: Sequence[LearningMemoryRecord], vectors: np.ndarray) -> None:
        """Fold newly written rows into the live counts and the cached repo indexes."""
        rows_by_repo: dict[str, list[int]] = {}
        for i, record in enumerate(records):
            rows_by_repo.setdefault(record.repo, []).append(i)
        for repo, rows in rows_by_repo.items():
            if repo in self._repo_counts:
                self._repo_counts[repo] += len(rows)
            owner = records[rows[0]].owner
            if owner in self._owner_repos:
                self._owner_repos[owner][repo] += len(rows)
            entry = self._vectors.peek(repo)
            if entry is None:
                continue
            limit = self._options.exact_search_max_rows
            if entry.kind == "exact" and len(entry) <= limit < len(entry) + len(rows):
                self._vectors.pop(repo)  # outgrew exact search: the next query builds its ANN index
                continue
            if self._outgrew_calibration(repo, len(entry) + len(rows)):
                self._vectors.pop(repo)
                continue
            entry.add(np.array([records[i].id for i in rows], dtype=np.int64), vectors[rows])
        self._vectors.shrink()

    def _outgrew_calibration(self, repo: str, live_rows: int) -> bool:
        """The repo's calibrated index (approximate, or the exact scan chosen above the limit) has grown
        by ``ann_recalibrate_growth`` since it was measured: the next query calibrates it again."""
        report = self._reports.get(repo)
        if report is None or report.recall_mean is None:  # not calibrated (below the limit, or unmeasured)
            return False
        return needs_recalibration(report.rows, live_rows, self._options.ann_recalibrate_growth)

    def _invalidate(self) -> None:
        self._keys = None
        self._repo_counts.clear()
        self._owner_repos.clear()
        self._vectors.clear()
        self._reports.clear()


def _declare_primary_key(table: Any) -> None:
    """Mark ``id`` as the table's (unenforced) primary key once, so concurrent ``merge_insert`` commits of
    the same new id conflict and are retried instead of both inserting it."""
    if _is_primary_key(table.schema.field("id")):
        return
    try:
        table.set_unenforced_primary_key("id")
    except Exception:
        table.checkout_latest()  # another process declared it at the same moment
        if not _is_primary_key(table.schema.field("id")):
            raise


def _is_primary_key(field: Any) -> bool:
    return any(key.startswith(_PRIMARY_KEY) for key in (field.metadata or {}))


_MERGE_ATTEMPTS = 5
_CONFLICT_MARKERS = ("Incompatible transaction", "Retryable commit conflict", "commit conflict")


def _is_commit_conflict(exc: Exception) -> bool:
    """A Lance commit refused because another writer committed first (the write itself can be retried)."""
    text = str(exc)
    return any(marker.lower() in text.lower() for marker in _CONFLICT_MARKERS)


def _live_where(repo: str) -> str:
    return f"repo = {sql_string(repo)} AND stale = false"


def open_memory_store(
    uri: str | Any,
    dimensions: int = 1024,
    *,
    options: MemoryStoreOptions | None = None,
    clock: Callable[[], datetime] | None = None,
    storage_options: dict[str, str] | None = None,
    table_name: str = TABLE_NAME,
    multi_writer: bool | None = None,
) -> LanceMemoryStore:
    """Open (creating if needed) the memory table at ``uri`` with ``dimensions``-sized vectors.

    An existing table with another vector size is a clear error: one store holds one embedding size.
    ``multi_writer`` (default: whether ``uri`` is an object store, or ``options.multi_writer``) switches to
    content-key ids, ``merge_insert`` writes, periodic refreshes and no compaction on write.
    """
    if dimensions <= 0:
        raise ValueError(f"dimensions must be positive, got {dimensions}")
    import lancedb  # here: importing LanceDB costs seconds, paid only by a process that opens a store

    options = options or MemoryStoreOptions()
    if multi_writer is None:
        multi_writer = options.multi_writer or is_remote(str(uri))
    options = options.model_copy(update={"multi_writer": multi_writer})
    db = lancedb.connect(str(uri), storage_options=storage_options)
    table = open_or_create(
        db,
        table_name,
        lambda: db.create_table(table_name, schema=memory_schema(dimensions)),
        str(uri),
        storage_options,
    )
    existing = vector_dimensions(table.schema)
    if existing != dimensions:
        raise ValueError(
            f"memory store at {uri} holds {existing}-dimension vectors, not {dimensions}; "
            "use a separate store per embedding size"
        )
    if multi_writer:
        _declare_primary_key(table)
    return LanceMemoryStore(
        table,
        dimensions,
        options,
        clock or (lambda: datetime.now(UTC)),
        WriteHealth("memory", local_directory(uri)),
    )
