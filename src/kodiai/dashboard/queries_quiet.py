"""Why it stayed quiet: for one pull request, each review's configuration snapshot, its suppressions (by
which pattern, over which findings), and each retrieval's cut — which memories the pool held, their
distances, which were kept, the threshold and the method that drew the line, and a later stage's reason."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kodiai.dashboard.tables import Table
from kodiai.storage.database import Executor


@dataclass
class QuietReport:
    repo: str
    pr_number: int
    reviews: Table = field(default_factory=lambda: Table("quiet-reviews", "Reviews", ()))
    suppressions: Table = field(default_factory=lambda: Table("quiet-suppressions", "Suppressions", ()))
    retrievals: Table = field(default_factory=lambda: Table("quiet-retrievals", "Retrievals", ()))
    hits: Table = field(default_factory=lambda: Table("quiet-memories", "Memories looked at", ()))
    configs: list[tuple[int, str]] = field(default_factory=list)
    """``(review id, the .kodiai.yml settings that applied, pretty-printed)``."""

    @property
    def tables(self) -> list[Table]:
        return [self.reviews, self.suppressions, self.retrievals, self.hits]


def quiet_report(knowledge: Executor, telemetry: Executor, repo: str, pr_number: int) -> QuietReport:
    """The caller has checked the viewer may see ``repo``."""
    out = QuietReport(repo, pr_number)
    reviews = knowledge.query(
        "SELECT id, created_at, head_sha, delivery_id, conclusion, findings_total, suppressions_applied,"
        " config_snapshot FROM reviews WHERE repo = ? AND pr_number = ? ORDER BY id DESC LIMIT 20",
        (repo, pr_number),
    )
    out.reviews = Table(
        "quiet-reviews",
        "Reviews",
        ("review_id", "created_at", "head_sha", "delivery_id", "conclusion", "findings", "suppressed"),
        [
            (
                r["id"],
                r["created_at"],
                r["head_sha"],
                r["delivery_id"],
                r["conclusion"],
                r["findings_total"],
                r["suppressions_applied"],
            )
            for r in reviews
        ],
    )
    out.configs = [(int(r["id"]), _pretty(r["config_snapshot"])) for r in reviews if r["config_snapshot"]]
    ids = [int(r["id"]) for r in reviews]
    if ids:
        marks = ", ".join("?" for _ in ids)
        supp = knowledge.fetch_all(
            "SELECT review_id, pattern, matched_count, finding_ids FROM suppression_log"
            f" WHERE review_id IN ({marks}) ORDER BY review_id DESC, id",
            tuple(ids),
        )
        suppressed = knowledge.fetch_all(
            "SELECT review_id, title, severity, suppression_pattern FROM findings"
            f" WHERE suppressed = 1 AND review_id IN ({marks}) ORDER BY review_id DESC, id",
            tuple(ids),
        )
        rows = [(r[0], "rule", r[1], r[2], r[3]) for r in supp]
        rows += [(r[0], "finding", r[3] or "", 1, f"{r[2]}: {r[1]}") for r in suppressed]
        out.suppressions = Table(
            "quiet-suppressions", "Suppressions", ("review_id", "kind", "pattern", "matched", "detail"), rows
        )
    quality = telemetry.fetch_all(
        "SELECT created_at, delivery_id, threshold_method, distance_threshold, candidate_count, result_count,"
        " avg_distance, second_stage, abstain_reason, channels FROM retrieval_quality"
        " WHERE repo = ? AND pr_number = ? ORDER BY created_at DESC LIMIT 20",
        (repo, pr_number),
    )
    out.retrievals = Table(
        "quiet-retrievals",
        "Retrievals",
        (
            "created_at",
            "delivery_id",
            "threshold_method",
            "distance_threshold",
            "candidates",
            "kept",
            "avg_distance",
            "second_stage",
            "stage_reason",
            "channels",
        ),
        [tuple(r) for r in quality],
    )
    hits = knowledge.fetch_all(
        "SELECT h.delivery_id, h.finding_id, h.source_repo, h.outcome, h.distance, h.adjusted_distance, h.kept,"
        " h.kept_rank, (SELECT MIN(f.title) FROM findings f WHERE f.comment_id = h.finding_id)"
        " FROM retrieval_hits h WHERE h.repo = ? AND h.pr_number = ?"
        " ORDER BY h.id DESC LIMIT 200",
        (repo, pr_number),
    )
    out.hits = Table(
        "quiet-memories",
        "Memories looked at",
        (
            "delivery_id",
            "finding_id",
            "source_repo",
            "outcome",
            "distance",
            "adjusted_distance",
            "kept",
            "rank",
            "title",
        ),
        [(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), r[7], r[8]) for r in hits],
    )
    return out


def _pretty(snapshot: Any) -> str:
    try:
        return json.dumps(json.loads(str(snapshot)), indent=2, sort_keys=True)
    except ValueError:
        return str(snapshot)
