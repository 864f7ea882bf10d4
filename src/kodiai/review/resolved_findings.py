"""Record which findings of the PR's earlier review a re-review found fixed (issue 28's "fixed in a later push").

The delta classification (:mod:`kodiai.review.delta`) calls a prior finding *resolved* when no finding of the
new review has its file and title fingerprint; it only logs the counts. This step keeps the fact per finding
(``resolved_findings``), with one narrowing: only priors on a file the push changed count, since an
incremental re-review looks only at the changed files and a finding on untouched code was not fixed.
Fail-open like the other record steps; nothing is written for a run that did not succeed (its findings are
missing, not fixed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from kodiai.handler_kit.fail_open import fail_open
from kodiai.log import Logger
from kodiai.review.delta import finding_key
from kodiai.review.postprocess import ProcessedFinding
from kodiai.review.pull_request import PullRequestFacts
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_resolved import StoredPrior
from kodiai.text.fingerprint import fingerprint_finding_title


def resolved_ids(
    priors: Sequence[StoredPrior], current: Sequence[ProcessedFinding], changed_files: Iterable[str]
) -> list[int]:
    """Ids of the priors on a changed file whose ``file:fingerprint`` key no current finding has (pure)."""
    changed = set(changed_files)
    present = {finding_key(f.file_path, fingerprint_finding_title(f.title)) for f in current}
    return [
        p.finding_id
        for p in priors
        if p.file_path in changed
        and finding_key(p.file_path, fingerprint_finding_title(p.title)) not in present
    ]


def _write(
    store: KnowledgeStore,
    facts: PullRequestFacts,
    prior_head_sha: str,
    current: Sequence[ProcessedFinding],
    changed_files: Sequence[str],
    review_id: int,
) -> int:
    priors = store.get_prior_findings_with_ids(facts.full_name, facts.number, prior_head_sha)
    ids = resolved_ids(priors, current, changed_files)
    return store.record_resolved_findings(review_id, facts.full_name, facts.number, ids)


async def record_resolved_findings(
    store: KnowledgeStore | None,
    facts: PullRequestFacts,
    *,
    prior_head_sha: str | None,
    changed_files: Sequence[str],
    current: Sequence[ProcessedFinding],
    review_id: int | None,
    succeeded: bool,
    log: Logger,
) -> int:
    """After a successful incremental re-review (``prior_head_sha`` set): one ``resolved_findings`` row per
    earlier finding it found fixed. Returns the rows written (0 on any failure)."""
    if store is None or review_id is None or prior_head_sha is None or not succeeded:
        return 0
    written = await fail_open(
        log,
        "resolved-findings",
        lambda: asyncio.to_thread(_write, store, facts, prior_head_sha, current, changed_files, review_id),
        0,
        "Resolved findings write failed (fail-open)",
    )
    if written:
        log.info("Resolved findings recorded", gate="review-details-output", resolved=written)
    return written
