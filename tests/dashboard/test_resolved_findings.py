"""Findings fixed in a later push (issue 28): a re-review records which earlier findings it found resolved,
and the memory page counts them per memory and per repository, against plain SQL on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kodiai.dashboard.queries_memory import memory_export, memory_quality
from kodiai.dashboard.scope import Access, scope_for
from kodiai.dashboard.sources import Sources
from kodiai.review.postprocess import ProcessedFinding
from kodiai.review.resolved_findings import resolved_ids
from kodiai.storage.knowledge_resolved import StoredPrior
from support.db_backends import DbBackend
from support.review_harness import OWNER, REPO, ReviewHarness, inline

OPERATOR = Access("operator", operator=True)
SYNC_ON = "review:\n  triggers:\n    onSynchronize: true\n"


def push(h: ReviewHarness, pull: dict[str, Any], files: dict[str, str]) -> dict[str, Any]:
    """A new commit on the PR branch; the PR's head moves to it."""
    sha = h.repo.commit(files, "follow-up", branch=pull["head"]["ref"])
    h.state.add_pull(OWNER, REPO, pull["number"], head_sha=sha)
    return {**pull, "head": {**pull["head"], "sha": sha}}


async def test_a_re_review_records_the_earlier_finding_its_push_fixed(harness: ReviewHarness) -> None:
    """Two findings; the push changes one file and the re-review posts neither: the finding on the changed
    file is recorded fixed by the re-review, the one on untouched code is not (it was not looked at)."""
    pull = harness.open_pr(
        config=SYNC_ON,
        base_files={"src/index.ts": "export const a = 1;\n", "src/other.ts": "export {};\n"},
        head_files={"src/index.ts": "export const a = 2;\n", "src/other.ts": "export const b = open();\n"},
    )
    harness.script(
        inline("src/index.ts", 1, "[MAJOR] Constant changed without a migration\n\nCallers break."),
        inline("src/other.ts", 1, "[MAJOR] Handle is never closed\n\nClose it."),
    )
    await harness.deliver(pull)
    first_head = pull["head"]["sha"]
    pull = push(harness, pull, {"src/index.ts": "export const a = 3;\n"})
    await harness.deliver(pull, "synchronize")  # the model posts nothing this time

    assert len(harness.executor.contexts) == 2
    fixed = harness.rows(
        "knowledge.db",
        "SELECT f.id FROM findings f JOIN reviews r ON r.id = f.review_id"
        " WHERE r.head_sha = ? AND f.file_path = 'src/index.ts'",
        (first_head,),
    )
    second = harness.rows("knowledge.db", "SELECT id FROM reviews WHERE head_sha = ?", (pull["head"]["sha"],))
    assert len(fixed) == 1 and len(second) == 1
    assert harness.rows(
        "knowledge.db", "SELECT finding_id, review_id, repo, pr_number FROM resolved_findings"
    ) == [(fixed[0][0], second[0][0], "acme/repo", 101)]
    assert harness.logged("Delta classification")[0]["deltaResolved"] == 2  # the log's wider notion


def test_resolved_ids_need_the_file_changed_and_the_finding_gone() -> None:
    def current(path: str, title: str) -> ProcessedFinding:
        return ProcessedFinding(
            comment_id=1, file_path=path, title=title, severity="major", original_severity="major",
            category="correctness", start_line=1, end_line=1, confidence=80, suppressed=False,
            suppression_pattern=None, severity_elevated=False,
        )  # fmt: skip

    priors = [
        StoredPrior(finding_id=1, file_path="a.py", title="Leak"),
        StoredPrior(finding_id=2, file_path="a.py", title="Still here"),
        StoredPrior(finding_id=3, file_path="b.py", title="Untouched"),
    ]
    assert resolved_ids(priors, [current("a.py", "Still here")], ["a.py"]) == [1]


PLAIN_FIXED = (
    "SELECT h.source_repo AS repo, h.finding_id AS fid, COUNT(*) AS n FROM retrieval_hits h"
    " JOIN reviews r ON r.delivery_id = h.delivery_id JOIN findings f ON f.review_id = r.id"
    " WHERE h.kept = 1 AND r.created_at >= ?"
    " AND EXISTS (SELECT 1 FROM resolved_findings x WHERE x.finding_id = f.id)"
    " GROUP BY h.source_repo, h.finding_id"
)


def test_memory_page_counts_findings_fixed_after_retrieval(seeded: tuple[DbBackend, Sources]) -> None:
    """Resolutions of the findings of reviews that held a memory (one finding resolved by two later reviews
    counts once) match plain SQL per memory, in the export and per repository; precision stays
    👍 / (👍 + 👎)."""
    backend, src = seeded
    findings = backend.rows(
        "knowledge",
        "SELECT f.id, r.delivery_id AS d FROM findings f JOIN reviews r ON r.id = f.review_id"
        " WHERE r.delivery_id IN ('rv1', 'rv2', 'rv3') ORDER BY f.id",
    )
    rv1 = [f["id"] for f in findings if f["d"] == "rv1"]
    rv3 = [f["id"] for f in findings if f["d"] == "rv3"]
    assert rv1 and rv3
    for fid, review in ((rv1[0], 90), (rv1[0], 91), (rv3[0], 92)):
        backend.write(
            "knowledge",
            "INSERT INTO resolved_findings (finding_id, review_id, repo, pr_number) VALUES (?, ?, 'acme/api', 1)",
            (fid, review),
        )
    scope = scope_for(OPERATOR, repo=None, range_key="90d", now=datetime.now(UTC))
    plain = {(r["repo"], r["fid"]): r["n"] for r in backend.rows("knowledge", PLAIN_FIXED, (scope.since,))}
    assert plain == {("acme/api", 501): 1, ("acme/web", 502): 1}
    got = memory_quality(src.knowledge, scope)
    by_key = {(m.repo, m.finding_id): m for m in got.top}
    assert {k: m.fixed for k, m in by_key.items() if m.fixed} == plain
    m501 = by_key[("acme/api", 501)]
    assert (m501.up, m501.down) == (2, 4) and m501.precision == pytest.approx(1 / 3)  # 👍/👎 only
    every = {(r[0], r[1]): r for r in memory_export(src.knowledge, scope).rows}
    assert {k: r[11] for k, r in every.items() if r[11]} == plain
    rollup = {r[0]: r[8] for r in got.rollup.rows}
    assert rollup == {"acme/api": 1, "acme/web": 1}
