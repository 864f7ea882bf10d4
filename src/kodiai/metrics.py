"""Prometheus metrics for one app instance (a private ``CollectorRegistry``, never the global one).

The composition root builds one :class:`Metrics` and passes it to whatever records something. Other
areas increment the counters they are handed, e.g.
``metrics.retrieval_threshold_method.labels(method).inc()``.
"""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

JOB_DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)


class Metrics:
    """Every metric the server exposes at ``GET /metrics``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.webhook_deliveries = Counter(
            "kodiai_webhook_deliveries",
            "Webhook deliveries by event name and outcome (accepted, duplicate, filtered, unrouted, "
            "bad_signature, invalid_json, too_large).",
            ["event", "outcome"],
            registry=r,
        )
        self.queue_depth = Gauge(
            "kodiai_job_queue_depth",
            "Jobs waiting in each installation's lane.",
            ["installation"],
            registry=r,
        )
        self.jobs_running = Gauge("kodiai_jobs_running", "Jobs running now, across all lanes.", registry=r)
        self.job_duration = Histogram(
            "kodiai_job_duration_seconds",
            "Job run time by job type and outcome (ok, error, timeout).",
            ["job_type", "outcome"],
            buckets=JOB_DURATION_BUCKETS,
            registry=r,
        )
        self.jobs_shed = Counter(
            "kodiai_jobs_shed", "Jobs refused because their installation's lane was full.", registry=r
        )
        self.handler_failures = Counter(
            "kodiai_handler_failures",
            "Handler failures during dispatch, by handler.",
            ["handler"],
            registry=r,
        )
        self.journal_replayed = Counter(
            "kodiai_journal_replayed",
            "Unfinished deliveries replayed from the job journal at start-up.",
            registry=r,
        )
        self.reviews_waiting = Gauge(
            "kodiai_reviews_waiting",
            "Reviews dequeued from their lane and waiting for a slot under the global review cap.",
            registry=r,
        )
        self.reviews_running = Gauge(
            "kodiai_reviews_running", "Reviews running now (at most the global review cap).", registry=r
        )
        self.reviews = Counter(
            "kodiai_reviews",
            "Review jobs by how they ended (published, approved, skipped reason, error category, ...).",
            ["outcome"],
            registry=r,
        )
        self.retrieval_threshold_method = Counter(
            "kodiai_retrieval_threshold_method",
            "Learning-memory retrievals by adaptive threshold method (gap, percentile, configured, …).",
            ["method"],
            registry=r,
        )

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
