"""Prometheus metrics for one app instance (a private ``CollectorRegistry``, never the global one).

The composition root builds one :class:`Metrics` and passes it to whatever records something. Other
areas increment the counters they are handed, e.g.
``metrics.retrieval_threshold_method.labels(method).inc()``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import secrets
import threading
from typing import Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

JOB_DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
INDEX_BUILD_BUCKETS = (0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
MEMORY_INDEX_STRUCTURES = ("ivf", "hnsw", "exact")


class MemoryIndexBuild(Protocol):
    """What the metrics read from a learned-memory index build (``kodiai.learning.ann_index.IndexReport``,
    not imported here so that ``/metrics`` does not load faiss)."""

    @property
    def structure(self) -> str: ...

    @property
    def recall(self) -> float | None: ...

    @property
    def breadth(self) -> int | None: ...

    @property
    def build_seconds(self) -> float: ...


def _counter(r: CollectorRegistry, name: str, doc: str, *labels: str) -> Counter:
    """A counter in ``r``, the instance's own registry (never prometheus_client's global one)."""
    return Counter(name, doc, labels, registry=r)


def _gauge(r: CollectorRegistry, name: str, doc: str, *labels: str) -> Gauge:
    """A gauge in ``r`` (as :func:`_counter`)."""
    return Gauge(name, doc, labels, registry=r)


class MemoryIndexMetrics:
    """Learned-memory in-memory index builds, aggregated by structure (``ivf``, ``hnsw``, ``exact``):
    repository names never become labels, so the series stay few however many repos there are."""

    def __init__(self, r: CollectorRegistry) -> None:
        self.repos = _gauge(
            r,
            "kodiai_memory_index_repos",
            "Repositories whose latest in-memory learned-memory index (built in this process) has this "
            "structure.",
            "structure",
        )
        self.recall_min = _gauge(
            r,
            "kodiai_memory_index_recall_min",
            "Lowest recall@20 (95 % lower confidence bound, estimated at build time) among those "
            "repositories' indexes (1 for exact).",
            "structure",
        )
        self.breadth_max = _gauge(
            r,
            "kodiai_memory_index_breadth_max",
            "Widest search breadth chosen among them (nprobe for ivf, efSearch for hnsw).",
            "structure",
        )
        self.build_seconds = Histogram(
            "kodiai_memory_index_build_seconds",
            "In-memory learned-memory index builds (calibration included) by chosen structure.",
            ["structure"],
            buckets=INDEX_BUILD_BUCKETS,
            registry=r,
        )
        self._latest: dict[str, MemoryIndexBuild] = {}
        self._lock = threading.Lock()

    def observe(self, repo: str, build: MemoryIndexBuild) -> None:
        """Record one build (the store calls this after each; ``repo`` only keys the latest build)."""
        with self._lock:
            self.build_seconds.labels(build.structure).observe(build.build_seconds)
            self._latest[repo] = build
            for structure in MEMORY_INDEX_STRUCTURES:
                builds = [b for b in self._latest.values() if b.structure == structure]
                self.repos.labels(structure).set(len(builds))
                recalls = [b.recall for b in builds if b.recall is not None]
                breadths = [b.breadth for b in builds if b.breadth is not None]
                _set_or_drop(self.recall_min, structure, min(recalls) if recalls else None)
                _set_or_drop(self.breadth_max, structure, max(breadths) if breadths else None)


def _set_or_drop(gauge: Gauge, label: str, value: float | None) -> None:
    """Set the labelled series, or drop it when no build has a value any more."""
    if value is not None:
        gauge.labels(label).set(value)
        return
    with contextlib.suppress(KeyError):
        gauge.remove(label)


class InstallationGauge:
    """A gauge labelled by installation whose label is a keyed hash of the id unless raw ids are allowed.

    Installation ids tie a Kodiai instance to the organisations it serves; ``/metrics`` is often
    scraped widely, so by default it shows ``HMAC(key, id)`` (12 hex digits, stable for one key) instead.
    Callers pass the raw id, as to a plain gauge: ``labels(str(id))``, ``remove(str(id))``.
    """

    def __init__(self, gauge: Gauge, *, raw_ids: bool, key: bytes) -> None:
        self.gauge = gauge
        self._raw = raw_ids
        self._key = key

    def label(self, installation: str) -> str:
        """The label value shown for ``installation``."""
        if self._raw:
            return installation
        return hmac.new(self._key, installation.encode(), hashlib.sha256).hexdigest()[:12]

    def labels(self, installation: str) -> Gauge:
        return self.gauge.labels(self.label(installation))

    def remove(self, installation: str) -> None:
        self.gauge.remove(self.label(installation))


class Metrics:
    """Every metric the server exposes at ``GET /metrics``."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        raw_installation_ids: bool = False,
        label_key: bytes | None = None,
    ) -> None:
        """``raw_installation_ids``: label by raw installation id (opt-in); otherwise by a hash keyed with
        ``label_key`` (random per process when not given)."""
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        key = label_key or secrets.token_bytes(32)

        def by_installation(name: str, doc: str) -> InstallationGauge:
            return InstallationGauge(
                _gauge(r, name, doc, "installation"), raw_ids=raw_installation_ids, key=key
            )

        self.webhook_deliveries = _counter(
            r,
            "kodiai_webhook_deliveries",
            "Webhook deliveries by event name and outcome (accepted, duplicate, filtered, unrouted, "
            "bad_signature, invalid_json, invalid_delivery_id, too_large, busy, body_timeout, trailers).",
            "event",
            "outcome",
        )
        self.queue_depth = by_installation(
            "kodiai_job_queue_depth",
            "Jobs waiting in each installation's lane (label: a keyed hash of the installation id "
            "unless METRICS_INSTALLATION_IDS=true).",
        )
        self.spend_cap_refusals = _counter(
            r,
            "kodiai_spend_cap_refusals",
            "Runs refused by the daily spend cap, by kind (review, mention, write) and reason "
            "(installation-cap, repo-cap, unreadable).",
            "kind",
            "reason",
        )
        self.spend_today_usd = by_installation(
            "kodiai_spend_today_usd",
            "Today's (UTC) recorded spend of each installation with a daily spend cap, as read by the "
            "last cap check (label as kodiai_job_queue_depth).",
        )
        self.http_request_timeouts = _counter(
            r,
            "kodiai_http_request_timeouts",
            "Connections closed because a request was not received within HTTP_REQUEST_TIMEOUT_SECONDS.",
        )
        self.jobs_running = _gauge(r, "kodiai_jobs_running", "Jobs running now, across all lanes.")
        self.job_duration = Histogram(
            "kodiai_job_duration_seconds",
            "Job run time by job type and outcome (ok, error, timeout).",
            ["job_type", "outcome"],
            buckets=JOB_DURATION_BUCKETS,
            registry=r,
        )
        self.jobs_shed = _counter(
            r, "kodiai_jobs_shed", "Jobs refused because their installation's lane was full."
        )
        self.handler_failures = _counter(
            r, "kodiai_handler_failures", "Handler failures during dispatch, by handler.", "handler"
        )
        self.journal_replayed = _counter(
            r, "kodiai_journal_replayed", "Unfinished deliveries replayed from the job journal at start-up."
        )
        self.reviews_waiting = _gauge(
            r,
            "kodiai_reviews_waiting",
            "Reviews dequeued from their lane and waiting for a slot under the global review cap.",
        )
        self.reviews_running = _gauge(
            r, "kodiai_reviews_running", "Reviews running now (at most the global review cap)."
        )
        self.reviews = _counter(
            r,
            "kodiai_reviews",
            "Review jobs by how they ended (published, approved, skipped reason, error category, ...).",
            "outcome",
        )
        self.retrieval_threshold_method = _counter(
            r,
            "kodiai_retrieval_threshold_method",
            "Learning-memory retrievals by adaptive threshold method (gap, percentile, configured, …).",
            "method",
        )
        self._add_journal_metrics(r)
        self.memory_index = MemoryIndexMetrics(r)

    def _add_journal_metrics(self, r: CollectorRegistry) -> None:
        """Delivery guarantees: what was answered, and whether the job journal keeps up."""
        self.webhook_responses = _counter(
            r,
            "kodiai_webhook_responses",
            "Answers to POST /webhooks/github by HTTP status (a 500 means the delivery was not recorded).",
            "status",
        )
        self.webhook_signature_matches = _counter(
            r,
            "kodiai_webhook_signature_matches",
            "Verified webhook deliveries by the secret that signed them: current (GITHUB_WEBHOOK_SECRET) or "
            "previous (GITHUB_WEBHOOK_SECRET_PREVIOUS; once it stops growing, the old secret can go).",
            "secret",
        )
        self.journal_write_failures = _counter(
            r,
            "kodiai_journal_write_failures",
            "Job journal write batches (or probes) that failed, e.g. on a full disk.",
        )
        self.journal_held_back_writes = _gauge(
            r,
            "kodiai_journal_held_back_writes",
            "Deferred journal writes (attempt, handler done, final status) held in memory until they land.",
        )
        self.journal_wal_bytes = _gauge(
            r, "kodiai_journal_wal_bytes", "Size of the job journal's WAL file after the last commit."
        )
        self.store_write_failures = _counter(
            r,
            "kodiai_store_write_failures",
            "Failed writes to the knowledge, telemetry and learned-memory stores, by store and kind "
            "(no_space and io make the server not ready until a probe write lands; other is only counted).",
            "store",
            "kind",
        )
        self.outbound_secret_hits = _counter(
            r,
            "kodiai_outbound_secret_hits",
            "Secrets found in what the server sends out, by surface (issue_comment, review, review_comment, "
            "review_comment_reply, pull_request, commit_message, pushed_file, ...) and action (redacted, refused).",
            "surface",
            "action",
        )
        self.agent_sandbox_failures = _counter(
            r,
            "kodiai_agent_sandbox_failures",
            "Agent runs refused because the Claude Code CLI's sandbox (bubblewrap) could not start.",
        )
        self.jobs_dead = _counter(
            r,
            "kodiai_jobs_dead",
            "Deliveries moved to the dead-letter state (their job was cut by a process exit every attempt).",
        )
        # DATABASE_URL only (read from PostgreSQL at each scrape, the same in every replica)
        self.queue_jobs = _gauge(
            r,
            "kodiai_queue_jobs",
            "Jobs of the deliveries queue by procrastinate state (todo, doing, failed, ...).",
            "state",
        )
        self.journal_deliveries = _gauge(
            r,
            "kodiai_journal_deliveries",
            "Deliveries in the job journal by open status (pending, running, requeued, dead).",
            "status",
        )

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
