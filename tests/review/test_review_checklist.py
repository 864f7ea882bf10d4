"""behaviour R4.1 (RV-01…RV-52): the review handler, one test per checklist line, with its id.

Every test drives the real handler stack (see ``review_harness``): a ``pull_request`` delivery goes
through the router and the installation's lane, the repository is cloned with real git, the model is a
scripted CLI stream through the real SDK client and our MCP tools, GitHub is the fake REST server, and
the stores are real SQLite/LanceDB files. Where the original's test injected a mock (a reranker, an
executor result), the test reaches the same state with real inputs and says so.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from kodiai.learning.recency import apply_recency_weighting
from kodiai.learning.rerank import rerank_by_language
from kodiai.learning.types import LearningMemoryRecord
from kodiai.storage.knowledge_models import FeedbackReactionRecord, FindingRecord, ReviewRecord
from kodiai.text.fingerprint import fingerprint_finding_title
from support.gitrepo import git
from support.review_harness import ReviewHarness, inline, yaml_finding
from support.scripted_transport import Result

ISO_MS = re.compile(r"Review completed: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def details_bodies(h: ReviewHarness, number: int = 101) -> list[str]:
    return [c["body"] for c in h.issue_comments(number) if "<summary>Review Details</summary>" in c["body"]]


def findings_rows(h: ReviewHarness, number: int = 101) -> list[dict[str, Any]]:
    """The findings recorded for PR ``number`` (seeded feedback adds findings of earlier PRs)."""
    import sqlite3

    conn = sqlite3.connect(h.tmp / "knowledge.db")
    conn.row_factory = sqlite3.Row
    try:
        sql = "SELECT f.* FROM findings f JOIN reviews r ON r.id = f.review_id WHERE r.pr_number = ? ORDER BY f.id"
        return [dict(r) for r in conn.execute(sql, (number,))]
    finally:
        conn.close()


def review_row(h: ReviewHarness) -> dict[str, Any]:
    import sqlite3

    conn = sqlite3.connect(h.tmp / "knowledge.db")
    conn.row_factory = sqlite3.Row
    try:
        rows = [dict(r) for r in conn.execute("SELECT * FROM reviews WHERE pr_number = 101 ORDER BY id")]
    finally:
        conn.close()
    assert len(rows) == 1, rows
    return rows[0]


def deleted_ids(h: ReviewHarness) -> list[int]:
    return [int(r.path.rsplit("/", 1)[1]) for r in h.calls("DELETE", r"/repos/acme/repo/pulls/comments/\d+")]


def review_comment_ids(h: ReviewHarness) -> dict[str, int]:
    """Posted inline comment id by the first line of its body (the finding's title line)."""
    return {c["body"].split("\n", 1)[0]: c["id"] for c in h.review_comments()}


# ---------------------------------------------------------------------------------- RV-01 … RV-06: who asked


async def test_rv_01_review_requested_for_the_app_enqueues_one_job(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    await harness.deliver(
        pull, "review_requested", requested_reviewer={"login": "KoDiAi[BoT]", "type": "Bot"}
    )
    assert len(harness.executor.contexts) == 1
    assert harness.executor.contexts[0].installation_id == 42
    assert harness.rows("knowledge.db", "SELECT COUNT(*) FROM run_state") == [(1,)]


async def test_rv_02_review_requested_for_alice_enqueues_nothing(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    await harness.deliver(pull, "review_requested", requested_reviewer={"login": "alice", "type": "User"})
    assert harness.executor.contexts == []
    assert harness.rows("knowledge.db", "SELECT COUNT(*) FROM run_state") == [(0,)]
    assert [e["skipReason"] for e in harness.logged("Review not started")] == ["non-kodiai-reviewer"]


async def test_rv_03_team_only_request_enqueues_nothing(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    await harness.deliver(pull, "review_requested", requested_team={"name": "backend", "slug": "backend"})
    assert harness.executor.contexts == []
    assert [e["skipReason"] for e in harness.logged("Review not started")] == ["team-only-request"]


async def test_rv_04_ai_review_team_enqueues_one_job(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    await harness.deliver(pull, "review_requested", requested_team={"name": "ai-review", "slug": "ai-review"})
    assert len(harness.executor.contexts) == 1


async def test_rv_05_aireview_team_enqueues_one_job(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    await harness.deliver(pull, "review_requested", requested_team={"name": "aireview", "slug": "aireview"})
    assert len(harness.executor.contexts) == 1


async def test_rv_06_malformed_reviewer_payload_is_skipped_without_error(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    outcome = await harness.deliver(pull, "review_requested", requested_reviewer="kodiai")
    assert outcome.failed == 0 and outcome.succeeded == 1
    assert harness.executor.contexts == []
    skipped = harness.logged("Review not started")
    assert [(e["skipReason"], e["log_level"]) for e in skipped] == [
        ("missing-or-malformed-reviewer-payload", "warning")
    ]


# ---------------------------------------------------------------------------------- RV-07 … RV-11: profiles


async def _profile_run(h: ReviewHarness, *, additions: int, deletions: int, **pr: Any) -> tuple[str, str]:
    pull = h.open_pr(additions=additions, deletions=deletions, **pr)
    await h.deliver(pull)
    bodies = details_bodies(h)
    assert len(bodies) == 1, h.issue_comments()
    return h.prompts[0], bodies[0]


async def test_rv_07_small_pr_gets_strict(harness: ReviewHarness) -> None:
    prompt, details = await _profile_run(harness, additions=80, deletions=20)
    assert "Post at most 15 inline comments" in prompt
    assert "- Profile: strict (auto, lines changed: 100)" in details


async def test_rv_08_medium_pr_gets_balanced(harness: ReviewHarness) -> None:
    prompt, details = await _profile_run(harness, additions=90, deletions=20)
    assert "Post at most 7 inline comments" in prompt
    assert "Only report findings at these severity levels: critical, major, medium." in prompt
    assert "- Profile: balanced (auto, lines changed: 110)" in details


async def test_rv_09_large_pr_gets_minimal(harness: ReviewHarness) -> None:
    prompt, details = await _profile_run(harness, additions=600, deletions=20)
    assert "Post at most 3 inline comments" in prompt
    assert "Only report findings at these severity levels: critical, major." in prompt
    assert "- Profile: minimal (auto, lines changed: 620)" in details


async def test_rv_10_manual_profile(harness: ReviewHarness) -> None:
    prompt, details = await _profile_run(
        harness, additions=30, deletions=10, config="review:\n  profile: minimal\n"
    )
    assert "Post at most 3 inline comments" in prompt
    assert "- Profile: minimal (manual config)" in details


async def test_rv_11_keyword_override_beats_manual_profile(harness: ReviewHarness) -> None:
    prompt, details = await _profile_run(
        harness,
        additions=800,
        deletions=100,
        config="review:\n  profile: minimal\n",
        title="[strict-review] tighten auth checks",
    )
    assert "Post at most 15 inline comments" in prompt
    assert "- Profile: strict (keyword override)" in details


# ---------------------------------------------------------------------------------- RV-12 … RV-18


async def test_rv_12_ui_rereview_team_requested_on_open(harness: ReviewHarness) -> None:
    config = "review:\n  uiRereviewTeam: ai-review\n  requestUiRereviewTeamOnOpen: true\n"
    pull = harness.open_pr(config=config)
    await harness.deliver(pull)
    posts = harness.calls("POST", r"/repos/acme/repo/pulls/101/requested_reviewers")
    assert posts and posts[0].json == {"team_reviewers": ["ai-review"]}


async def test_rv_13_same_event_twice_runs_once_without_knowledge_store(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    h = ReviewHarness(tmp_path / "noknowledge", harness.fake, harness.state, knowledge=False)
    try:
        pull = h.open_pr()
        h.script(inline("src/index.ts", 1, "[MINOR] Naming nit\n\nRename it."))
        payload_extra = {"requested_reviewer": {"login": "kodiai[bot]"}}
        await h.deliver(pull, "review_requested", delivery="delivery-same", **payload_extra)
        await h.deliver(pull, "review_requested", delivery="delivery-same", **payload_extra)
        assert len(h.executor.contexts) == 1
        skipped = [e for e in h.logs if e.get("gateResult") == "skipped"]
        assert [e["skipReason"] for e in skipped] == ["already-published"]
    finally:
        h.close()


async def test_rv_14_retried_delivery_runs_once(tmp_path: Path, harness: ReviewHarness) -> None:
    h = ReviewHarness(tmp_path / "retry", harness.fake, harness.state, knowledge=False)
    try:
        pull = h.open_pr()
        h.script(inline("src/index.ts", 1, "[MINOR] Naming nit\n\nRename it."))
        await h.deliver(pull, delivery="delivery-retry-001")
        await h.deliver(pull, delivery="delivery-retry-001")
        assert len(h.executor.contexts) == 1
        assert h.logged("Skipping review execution because output already published for key")
    finally:
        h.close()


async def test_rv_15_clean_pr_replayed_twice_is_approved_once(harness: ReviewHarness) -> None:
    harness.state.set_permission("acme", "repo", "alice", "write")  # approvals only for a writer's PR
    pull = harness.open_pr()
    await harness.deliver(pull, delivery="delivery-clean")
    await harness.deliver(pull, delivery="delivery-clean")
    assert len(harness.executor.contexts) == 1
    approvals = [r for r in harness.reviews() if r["state"] == "APPROVED"]
    assert len(approvals) == 1
    body = approvals[0]["body"]
    assert "<!-- kodiai:review-output-key:" in body and "kodiai-review-output:v1" in body and "-->" in body


async def test_rv_15b_an_untrusted_authors_clean_pr_gets_a_comment_review_not_an_approval(
    harness: ReviewHarness,
) -> None:
    """Port deviation (issue 23): a PR whose author may not push (here: read access; forks likewise) may
    have talked the model into silence, so the verdict is the same body as a COMMENT review, which no
    branch protection counts as an approval; the model's own approval request is downgraded the same way."""
    pull = harness.open_pr()  # alice only reads
    await harness.deliver(pull)
    assert [r["state"] for r in harness.reviews()] == ["COMMENTED"]
    assert "<!-- kodiai:review-output-key:" in harness.reviews()[0]["body"]
    assert harness.executor.contexts[0].may_approve is False
    [evidence] = [e for e in harness.logged("Evidence bundle") if "untrusted" in str(e.get("outcome"))]
    assert evidence["outcome"] == "submitted-comment-review-untrusted-author"


async def test_rv_15c_a_writers_run_may_approve(harness: ReviewHarness) -> None:
    harness.state.set_permission("acme", "repo", "alice", "write")
    await harness.deliver(harness.open_pr())
    assert harness.executor.contexts[0].may_approve is True
    assert [r["state"] for r in harness.reviews()] == ["APPROVED"]


async def test_rv_16_published_run_is_not_approved(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    harness.script(inline("src/index.ts", 1, "[MAJOR] Broken contract\n\nCallers rely on 1."))
    await harness.deliver(pull)
    assert harness.executor.results[0].published is True
    assert harness.calls("POST", r"/repos/acme/repo/pulls/101/reviews") == []


def _branch_and_subject(workspace: Path) -> tuple[str, str, str]:
    return (
        git("rev-parse", "--abbrev-ref", "HEAD", cwd=workspace),
        git("log", "-1", "--format=%s", cwd=workspace),
        git("branch", "--list", "pr-review", cwd=workspace),
    )


async def test_rv_17_fork_pr_clones_base_and_checks_out_the_pr_head(harness: ReviewHarness) -> None:
    pull = harness.open_pr(fork=True)
    harness.executor.probe = _branch_and_subject
    await harness.deliver(pull)
    assert len(harness.executor.contexts) == 1
    created = harness.logged("Workspace created")
    assert [(e["owner"], e["repo"], e["ref"]) for e in created] == [("acme", "repo", "main")]
    branch, subject, _ = harness.executor.probes[0]
    assert branch == "pr-review" and subject == "pr 101"


async def test_rv_18_same_repo_pr_clones_the_head_branch(harness: ReviewHarness) -> None:
    pull = harness.open_pr(branch="feature")
    harness.executor.probe = _branch_and_subject
    await harness.deliver(pull)
    created = harness.logged("Workspace created")
    assert [(e["owner"], e["repo"], e["ref"]) for e in created] == [("acme", "repo", "feature")]
    branch, subject, local_pr_branch = harness.executor.probes[0]
    assert branch == "feature" and subject == "feature" and local_pr_branch == ""


# ---------------------------------------------------------------------------------- RV-19 … RV-21: skipPaths


async def test_rv_19_only_skipped_files_means_no_review(harness: ReviewHarness) -> None:
    pull = harness.open_pr(config="review:\n  skipPaths: ['docs/**']\n", head_files={"docs/a.md": "x\n"})
    await harness.deliver(pull)
    assert harness.executor.contexts == []
    assert harness.logged("All changed files matched skipPaths")


async def test_rv_20_extension_pattern_matches_nested_files(harness: ReviewHarness) -> None:
    pull = harness.open_pr(
        config="review:\n  skipPaths: ['*.md']\n", head_files={"README.md": "# x\n", "src/README.md": "y\n"}
    )
    await harness.deliver(pull)
    assert harness.executor.contexts == []
    assert harness.logged("All changed files matched skipPaths")


async def test_rv_21_a_remaining_file_is_reviewed(harness: ReviewHarness) -> None:
    pull = harness.open_pr(
        config="review:\n  skipPaths: ['docs/**']\n",
        head_files={"docs/guide.md": "x\n", "src/index.ts": "export const a = 3;\n"},
    )
    await harness.deliver(pull)
    assert len(harness.executor.contexts) == 1


# ---------------------------------------------------------------------------------- RV-22 … RV-24: retrieval


class AxisEmbedder:
    """Queries embed to e0; memories are written with chosen vectors, so their distances are exact."""

    model = "axis-test"
    dimensions = 8

    def generate(self, text: str, input_type: str) -> np.ndarray | None:
        vec = np.zeros(self.dimensions, dtype=np.float32)
        vec[0 if input_type == "query" else 7] = 1.0
        return vec

    def generate_many(self, texts: list[str], input_type: str) -> list[np.ndarray | None]:
        return [self.generate(t, input_type) for t in texts]


def at_distance(distance: float, axis: int) -> np.ndarray:
    """A unit vector at Euclidean ``distance`` from e0 (rotating toward ``axis``)."""
    cos = 1 - distance**2 / 2
    vec = np.zeros(8, dtype=np.float32)
    vec[0], vec[axis] = cos, math.sqrt(1 - cos**2)
    return vec


def seed_memory(
    h: ReviewHarness, distance: float, axis: int, path: str, created_at: str | None = None, **kw: Any
) -> None:
    assert h.memory_store is not None
    record = LearningMemoryRecord(
        repo="acme/repo",
        owner="acme",
        finding_id=axis,
        review_id=1,
        source_repo="acme/repo",
        finding_text=kw.get("text", f"Prior finding in {path}"),
        severity=kw.get("severity", "major"),
        category="correctness",
        file_path=path,
        outcome="accepted",
        embedding_model=h.embedder.model,
        embedding_dim=h.embedder.dimensions,
        created_at=created_at,
    )
    h.memory_store.write_memory(record, at_distance(distance, axis))


MAXGAP = "knowledge:\n  retrieval:\n    cutStrategy: maxgap\n"


def quality_rows(h: ReviewHarness) -> list[tuple[Any, ...]]:
    return h.rows(
        "telemetry.db",
        "SELECT delivery_id, repo, pr_number, event_type, top_k, distance_threshold, threshold_method, "
        "result_count, language_match_ratio, avg_distance FROM retrieval_quality",
    )


async def test_rv_22_retrieval_quality_row(tmp_path: Path, harness: ReviewHarness) -> None:
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        seed_memory(h, 0.2, 1, "src/example.ts")
        seed_memory(h, 0.4, 2, "src/example.py")
        pull = h.open_pr(config=MAXGAP)
        await h.deliver(pull, delivery="delivery-123")
        rows = quality_rows(h)
        assert len(rows) == 1
        delivery, repo, number, event_type, top_k, threshold, method, count, ratio, avg = rows[0]
        assert (delivery, repo, number, event_type, top_k, method, count) == (
            "delivery-123",
            "acme/repo",
            101,
            "pull_request",
            5,
            "percentile",
            2,
        )
        assert math.isclose(threshold, 0.46, rel_tol=1e-4) and math.isclose(ratio, 0.5)
        assert math.isclose(avg, 0.315, rel_tol=1e-4)
        assert "## Similar Prior Findings (Learning Context)" in h.prompts[0]
    finally:
        h.close()


async def test_rv_23_rerank_then_recency_and_the_average_after_recency(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    """The original injected a reranker and a recency weigher to see the order; here a memory 200 days old
    makes recency change the distances, and the recorded average is the one of rerank-then-recency."""
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    old = (datetime.now(UTC) - timedelta(days=200)).strftime("%Y-%m-%d %H:%M:%S")
    try:
        seed_memory(h, 0.1, 1, "src/example.ts", created_at=old, severity="minor")
        seed_memory(h, 0.3, 2, "src/other.ts")
        pull = h.open_pr(config=MAXGAP)
        await h.deliver(pull)
        assert h.memory_store is not None
        candidates = h.deps.memory.isolation.retrieve_with_isolation(  # type: ignore[union-attr]
            query_embedding=at_distance(0.0, 1),
            repo="acme/repo",
            owner="acme",
            sharing_enabled=False,
            top_k=5,
            distance_threshold=0.3,
            adaptive=True,
        ).results
        expected = apply_recency_weighting(rerank_by_language(candidates, ["TypeScript"]))
        wrong_order = rerank_by_language(
            apply_recency_weighting(rerank_by_language(candidates, [])), ["TypeScript"]
        )
        mean = sum(r.adjusted_distance for r in expected) / len(expected)
        avg = quality_rows(h)[0][-1]
        assert math.isclose(avg, mean, rel_tol=1e-6)
        assert not math.isclose(expected[0].adjusted_distance, candidates[0].distance * 0.85)
        assert wrong_order  # both orders are computable; only rerank-then-recency matches the row
    finally:
        h.close()


async def test_rv_24_telemetry_disabled_retrieval_runs_without_a_row(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        seed_memory(h, 0.2, 1, "src/example.ts")
        pull = h.open_pr(config=MAXGAP + "telemetry:\n  enabled: false\n")
        await h.deliver(pull)
        assert h.logged("Retrieval completed")
        assert "## Similar Prior Findings (Learning Context)" in h.prompts[0]
        assert quality_rows(h) == []
    finally:
        h.close()


# ---------------------------------------------------------------------------------- RV-25 … RV-29: telemetry


def executions(h: ReviewHarness) -> list[tuple[Any, ...]]:
    return h.rows("telemetry.db", "SELECT repo, pr_number, event_type, conclusion, cost_usd FROM executions")


async def test_rv_25_telemetry_disabled_no_execution_row(harness: ReviewHarness) -> None:
    pull = harness.open_pr(config="telemetry:\n  enabled: false\n")
    await harness.deliver(pull)
    assert len(harness.executor.contexts) == 1 and executions(harness) == []


async def test_rv_26_default_one_execution_row(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    await harness.deliver(pull)
    assert [r[:4] for r in executions(harness)] == [("acme/repo", 101, "pull_request.opened", "success")]


def cost_warnings(h: ReviewHarness) -> list[str]:
    return [c["body"] for c in h.issue_comments() if "cost warning" in c["body"]]


async def test_rv_27_cost_above_threshold_posts_a_warning(harness: ReviewHarness) -> None:
    pull = harness.open_pr(config="telemetry:\n  costWarningUsd: 1.0\n")
    harness.script(Result(total_cost_usd=2.5))
    await harness.deliver(pull)
    warnings = cost_warnings(harness)
    assert len(warnings) == 1 and "$2.5000" in warnings[0] and "$1.00" in warnings[0]


async def test_rv_28_default_threshold_never_warns(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    harness.script(Result(total_cost_usd=50.0))
    await harness.deliver(pull)
    assert not [c for c in harness.issue_comments() if "Kodiai cost warning" in c["body"]]


async def test_rv_29_telemetry_disabled_no_record_no_warning(harness: ReviewHarness) -> None:
    pull = harness.open_pr(config="telemetry:\n  enabled: false\n  costWarningUsd: 1.0\n")
    harness.script(Result(total_cost_usd=5.0))
    await harness.deliver(pull)
    assert executions(harness) == [] and cost_warnings(harness) == []


# ---------------------------------------------------------------------------------- RV-30 … RV-31: no merge base


def orphan_pr(h: ReviewHarness, config: str) -> dict[str, Any]:
    """A PR whose head branch shares no history with main (no merge base at any depth)."""
    pull = h.open_pr(config=config)
    work = h.repo.work
    git("checkout", "-q", "--orphan", "unrelated", cwd=work)
    git("rm", "-rfq", ".", cwd=work)
    (work / "src" / "api").mkdir(parents=True, exist_ok=True)
    (work / "src/api/phase27-uat-example.ts").write_text("export const uat = true;\n")
    (work / ".kodiai.yml").write_text(config)
    git("add", "-A", cwd=work)
    git("commit", "-qm", "unrelated history", cwd=work)
    git("push", "-q", "origin", "unrelated:unrelated", cwd=work)
    sha = git("rev-parse", "HEAD", cwd=work)
    git("checkout", "-q", "main", cwd=work)
    pull["head"] = {**pull["head"], "ref": "unrelated", "sha": sha}
    h.state.add_pull("acme", "repo", 101, head_sha=sha)
    return pull


async def test_rv_30_no_merge_base_falls_back_to_two_dot_with_path_instructions(
    harness: ReviewHarness,
) -> None:
    config = (
        "review:\n  profile: strict\n  pathInstructions:\n    - path: 'src/api/**'\n"
        "      instructions: Check API versioning on every endpoint.\n"
    )
    pull = orphan_pr(harness, config)
    await harness.deliver(pull)
    assert len(harness.executor.contexts) == 1
    prompt = harness.prompts[0]
    assert "src/api/phase27-uat-example.ts" in prompt
    assert (
        "Path-Specific Review Instructions" in prompt and "Check API versioning on every endpoint." in prompt
    )
    assert [e["strategy"] for e in harness.logged("Diff collected")] == ["fallback-two-dot"]
    assert 'mcp__git__diff {"revisions": ["origin/main..HEAD"]}' in prompt  # the range that exists there


async def test_rv_31_no_path_instructions_no_section(harness: ReviewHarness) -> None:
    pull = orphan_pr(harness, "review:\n  profile: strict\n")
    await harness.deliver(pull)
    prompt = harness.prompts[0]
    assert "src/api/phase27-uat-example.ts" in prompt and "Path-Specific Review Instructions" not in prompt


# ---------------------------------------------------------------------------------- RV-32 … RV-36: findings


async def test_rv_32_one_major_finding_is_counted(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    harness.script(inline("src/index.ts", 1, yaml_finding("MAJOR", "correctness", "Contract broken")))
    await harness.deliver(pull)
    row = review_row(harness)
    assert (row["findings_total"], row["findings_major"]) == (1, 1)


THREE_FINDINGS = (
    inline("src/index.ts", 1, "[CRITICAL] SQL injection in raw query path\n\nUser input reaches SQL."),
    inline("src/index.ts", 1, "[MINOR] Legacy shim cleanup candidate\n\nRemove it later."),
    inline("src/index.ts", 1, yaml_finding("MINOR", "style", "Formatting consistency issue")),
)
SUPPRESSING = "review:\n  minConfidence: 60\n  suppressions:\n    - 'glob:*legacy shim*'\n"


async def test_rv_33_suppression_confidence_deletions_and_details(harness: ReviewHarness) -> None:
    pull = harness.open_pr(config=SUPPRESSING)
    harness.script(*THREE_FINDINGS)
    await harness.deliver(pull)
    ids = [c["id"] for c in sorted(harness.state.review_comments("acme", "repo", 101), key=lambda c: c["id"])]
    row = review_row(harness)
    assert row["suppressions_applied"] == 1
    rows = findings_rows(harness)
    assert len(rows) == 3 and {r["review_id"] for r in rows} == {row["id"]}
    sql, shim, style = rows
    assert shim["suppression_pattern"] == "glob:*legacy shim*" and shim["suppressed"] == 1
    assert sql["confidence"] == 90 and sql["comment_surface"] == "pull_request_review_comment"
    assert isinstance(sql["review_output_key"], str) and sql["review_output_key"].startswith(
        "kodiai-review-output:v1"
    )
    assert style["confidence"] == 45
    assert harness.rows("knowledge.db", "SELECT pattern, matched_count FROM suppression_log") == [
        ("glob:*legacy shim*", 1)
    ]
    assert deleted_ids(harness) == [shim["comment_id"], style["comment_id"]]
    assert ids == [sql["comment_id"]]  # the two filtered comments are gone from the PR
    (details,) = details_bodies(harness)
    assert "Files reviewed:" in details and re.search(r"Lines changed: \+\d+ -\d+", details)
    assert "- Findings: 1 critical, 0 major, 0 medium, 2 minor" in details and ISO_MS.search(details)
    for absent in (
        "Lines analyzed:",
        "Suppressions applied:",
        "Estimated review time saved:",
        "Low Confidence Findings",
    ):
        assert absent not in details


async def test_rv_33_a_failed_deletion_is_tolerated(harness: ReviewHarness) -> None:
    pull = harness.open_pr(config=SUPPRESSING)
    harness.script(*THREE_FINDINGS)
    harness.fake.fail(500, method="DELETE", path=r"/repos/acme/repo/pulls/comments/\d+$", times=1)
    outcome = await harness.deliver(pull)
    assert outcome.failed == 0
    assert len(deleted_ids(harness)) == 2  # both attempted although the first failed
    assert harness.logged("Failed to delete filtered inline comment")
    assert details_bodies(harness) and review_row(harness)["findings_total"] == 3


async def test_rv_34_standalone_review_details(harness: ReviewHarness) -> None:
    """The original's run had ``published: false`` from a mock; the port's publish flag is truthful, so a
    run with findings always published. What RV-34 checks, the standalone Review Details comment, is what
    a run without a summary gets: the issue comments are listed and exactly one Details comment is made."""
    pull = harness.open_pr(config=SUPPRESSING)
    harness.script(*THREE_FINDINGS)
    await harness.deliver(pull)
    assert harness.calls("GET", r"/repos/acme/repo/issues/101/comments")
    created = harness.calls("POST", r"/repos/acme/repo/issues/101/comments")
    assert len(created) == 1 and "<summary>Review Details</summary>" in created[0].json["body"]
    attempt = harness.logged("Review Details attempt")
    assert attempt and attempt[0]["reviewOutputKey"].startswith("kodiai-review-output:v1")
    assert (attempt[0]["owner"], attempt[0]["repo"], attempt[0]["prNumber"]) == ("acme", "repo", 101)
    assert len(deleted_ids(harness)) == 2


async def test_rv_35_share_global_off_writes_no_global_pattern(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    harness.script(inline("src/index.ts", 1, "[MAJOR] Sanitize query input\n\nEscape it."))
    await harness.deliver(pull)
    assert harness.rows("knowledge.db", "SELECT COUNT(*) FROM global_patterns") == [(0,)]


async def test_rv_36_share_global_writes_an_anonymous_aggregate(harness: ReviewHarness) -> None:
    pull = harness.open_pr(config="knowledge:\n  shareGlobal: true\n")
    harness.script(inline("src/index.ts", 1, "[MAJOR] Sanitize query input\n\nEscape it."))
    await harness.deliver(pull)
    rows = harness.rows(
        "knowledge.db",
        "SELECT severity, category, confidence_band, pattern_fingerprint, count FROM global_patterns",
    )
    assert rows == [("major", "correctness", "high", fingerprint_finding_title("Sanitize query input"), 1)]
    columns = [r[1] for r in harness.rows("knowledge.db", "PRAGMA table_info(global_patterns)")]
    assert not {"repo", "file_path", "title"} & set(columns)


# ---------------------------------------------------------------------------------- RV-37 … RV-41: enforcement


async def test_rv_37_cpp_null_dereference_is_raised_to_critical(harness: ReviewHarness) -> None:
    pull = harness.open_pr(head_files={"src/main.cpp": "int main() { return 0; }\n"})
    harness.script(
        inline("src/main.cpp", 1, yaml_finding("MINOR", "correctness", "Null pointer dereference risk"))
    )
    await harness.deliver(pull)
    assert [r["severity"] for r in findings_rows(harness)] == ["critical"]


async def test_rv_38_formatter_config_suppresses_formatting_findings(harness: ReviewHarness) -> None:
    pull = harness.open_pr(
        base_files={".prettierrc": "{}\n", "src/app.ts": "export const x = 1;\n"},
        head_files={"src/app.ts": "export const x = 2;\n"},
    )
    harness.script(
        inline("src/app.ts", 1, yaml_finding("MINOR", "style", "Inconsistent formatting in component"))
    )
    await harness.deliver(pull)
    (row,) = findings_rows(harness)
    assert row["suppressed"] == 1
    assert deleted_ids(harness) == [row["comment_id"]]


async def test_rv_39_enforcement_leaves_a_major_finding_major(harness: ReviewHarness) -> None:
    """No real input makes enforcement throw (its fail-open path is pinned by
    tests/enforcement/test_apply_enforcement.py::test_fail_open_on_bad_rules); here the handler keeps a
    major finding major through enforcement and completes."""
    pull = harness.open_pr()
    harness.script(inline("src/index.ts", 1, yaml_finding("MAJOR", "correctness", "Off by one in loop")))
    outcome = await harness.deliver(pull)
    assert outcome.failed == 0
    assert [r["severity"] for r in findings_rows(harness)] == ["major"]


async def test_rv_40_error_run_skips_extraction_and_enforcement(harness: ReviewHarness) -> None:
    pull = harness.open_pr(
        base_files={".prettierrc": "{}\n", "src/app.ts": "x\n"}, head_files={"src/app.ts": "y\n"}
    )
    harness.script(
        inline("src/app.ts", 1, yaml_finding("MINOR", "style", "Inconsistent formatting in component")),
        Result(is_error=True, result="API Error: 500 Internal server error"),
    )
    await harness.deliver(pull)
    assert not harness.logged("Language enforcement applied")
    assert findings_rows(harness) == []
    errors = [c["body"] for c in harness.issue_comments() if "Kodiai encountered an API error" in c["body"]]
    assert len(errors) == 1 and "API Error: 500" in errors[0]
    assert [r[3] for r in executions(harness)] == ["error"]


async def test_rv_41_go_unchecked_error_is_raised_to_major(harness: ReviewHarness) -> None:
    pull = harness.open_pr(head_files={"cmd/server/main.go": "package main\n"})
    harness.script(
        inline(
            "cmd/server/main.go",
            1,
            yaml_finding("MEDIUM", "correctness", "Unchecked error return in handler"),
        )
    )
    await harness.deliver(pull)
    row = review_row(harness)
    assert (row["findings_major"], row["findings_medium"]) == (1, 0)


# ---------------------------------------------------------------------------------- RV-42 … RV-46: feedback


def seed_feedback(h: ReviewHarness, title: str, *, severity: str, category: str, downs: int = 5) -> None:
    """``downs`` thumbs-down from distinct reactors over three earlier PRs (5 down / 4 reactors / 3 PRs)."""
    assert h.knowledge is not None
    reviews = [h.knowledge.record_review(ReviewRecord(repo="acme/repo", pr_number=n)) for n in (1, 2, 3)]
    finding_ids = []
    for review_id in reviews:
        h.knowledge.record_findings(
            [
                FindingRecord(
                    review_id=review_id,
                    file_path="src/index.ts",
                    severity=severity,
                    category=category,
                    confidence=50,
                    title=title,
                )
            ]
        )
        finding_ids.append(h.rows("knowledge.db", "SELECT MAX(id) FROM findings")[0][0])
    reactors = ["u1", "u2", "u3", "u4", "u1"]
    h.knowledge.record_feedback_reactions(
        [
            FeedbackReactionRecord(
                repo="acme/repo",
                review_id=reviews[i % 3],
                finding_id=finding_ids[i % 3],
                comment_id=5000 + i,
                comment_surface="pull_request_review_comment",
                reaction_id=9000 + i + hash(title) % 1000 * 10,
                reaction_content="-1",
                reactor_login=reactors[i],
                severity=severity,
                category=category,
                file_path="src/index.ts",
                title=title,
            )
            for i in range(downs)
        ]
    )


AUTO_SUPPRESS = "feedback:\n  autoSuppress:\n    enabled: true\n"


async def test_rv_42_feedback_pattern_suppresses_the_finding(harness: ReviewHarness) -> None:
    seed_feedback(harness, "Prefer const over let", severity="minor", category="style")
    pull = harness.open_pr(config=AUTO_SUPPRESS)
    harness.script(inline("src/index.ts", 1, yaml_finding("MINOR", "style", "Prefer const over let")))
    await harness.deliver(pull)
    assert [r["suppressed"] for r in findings_rows(harness)] == [1]


async def test_rv_43_auto_suppress_disabled_by_default(harness: ReviewHarness) -> None:
    seed_feedback(harness, "Prefer const over let", severity="minor", category="style")
    pull = harness.open_pr()
    harness.script(inline("src/index.ts", 1, yaml_finding("MINOR", "style", "Prefer const over let")))
    await harness.deliver(pull)
    assert [r["suppressed"] for r in findings_rows(harness)] == [0]


async def test_rv_44_safety_guard_keeps_critical_security(harness: ReviewHarness) -> None:
    seed_feedback(harness, "Token leaked in logs", severity="critical", category="security")
    pull = harness.open_pr(config=AUTO_SUPPRESS)
    harness.script(inline("src/index.ts", 1, yaml_finding("CRITICAL", "security", "Token leaked in logs")))
    await harness.deliver(pull)
    assert [r["suppressed"] for r in findings_rows(harness)] == [0]


async def test_rv_45_feedback_store_failure_is_fail_open(harness: ReviewHarness) -> None:
    pull = harness.open_pr(config=AUTO_SUPPRESS)
    harness.script(inline("src/index.ts", 1, yaml_finding("MINOR", "style", "Prefer const over let")))
    import sqlite3

    conn = sqlite3.connect(harness.tmp / "knowledge.db")
    conn.execute("ALTER TABLE feedback_reactions RENAME TO feedback_reactions_gone")
    conn.commit()
    conn.close()
    outcome = await harness.deliver(pull)
    assert outcome.failed == 0
    assert [r["suppressed"] for r in findings_rows(harness)] == [0]
    assert [e for e in harness.logs if "Failed to evaluate feedback suppressions" in str(e.get("event"))]


async def test_rv_46_two_patterns_are_reported_in_details(harness: ReviewHarness) -> None:
    seed_feedback(harness, "Prefer const over let", severity="minor", category="style")
    seed_feedback(harness, "Trailing whitespace", severity="minor", category="style")
    pull = harness.open_pr(config=AUTO_SUPPRESS)
    await harness.deliver(pull)
    (details,) = details_bodies(harness)
    assert "2 patterns auto-suppressed by feedback" in details


# ---------------------------------------------------------------------------------- RV-47 … RV-50: priority


def two_findings_pr(h: ReviewHarness, config: str) -> dict[str, Any]:
    token = "".join(f"export const t{i} = {i};\n" for i in range(200))
    pull = h.open_pr(
        config=config,
        head_files={"docs/changelog.md": "- change\n", "src/auth/token.ts": token},
    )
    h.script(
        inline("docs/changelog.md", 1, yaml_finding("CRITICAL", "style", "Changelog entry format")),
        inline(
            "src/auth/token.ts", 1, yaml_finding("MAJOR", "security", "Token compared without constant time")
        ),
    )
    return pull


def ids_by_path(h: ReviewHarness) -> dict[str, int]:
    return {r["file_path"]: r["comment_id"] for r in findings_rows(h)}


async def test_rv_47_max_comments_keeps_the_highest_score(harness: ReviewHarness) -> None:
    pull = two_findings_pr(harness, "review:\n  maxComments: 1\n")
    await harness.deliver(pull)
    assert deleted_ids(harness) == [ids_by_path(harness)["docs/changelog.md"]]


async def test_rv_48_weights_decide_which_is_deleted(tmp_path: Path, harness: ReviewHarness) -> None:
    severity_only = "review:\n  maxComments: 1\n  prioritization:\n    severity: 1\n    fileRisk: 0\n    category: 0\n    recurrence: 0\n"
    pull = two_findings_pr(harness, severity_only)
    await harness.deliver(pull)
    assert deleted_ids(harness) == [ids_by_path(harness)["src/auth/token.ts"]]

    h = ReviewHarness(tmp_path / "risk", harness.fake, harness.state)
    try:
        risk_only = "review:\n  maxComments: 1\n  prioritization:\n    severity: 0\n    fileRisk: 1\n    category: 0\n    recurrence: 0\n"
        h.fake.reset_calls()
        pull = two_findings_pr(h, risk_only)
        await h.deliver(pull)
        assert deleted_ids(h) == [ids_by_path(h)["docs/changelog.md"]]
    finally:
        h.close()


async def test_rv_49_under_the_cap_nothing_is_deleted(harness: ReviewHarness) -> None:
    pull = two_findings_pr(harness, "review:\n  maxComments: 5\n")
    await harness.deliver(pull)
    assert deleted_ids(harness) == []


async def test_rv_50_prioritization_stats_in_details(harness: ReviewHarness) -> None:
    pull = two_findings_pr(harness, "review:\n  maxComments: 1\n")
    await harness.deliver(pull)
    (details,) = details_bodies(harness)
    assert (
        "Prioritization: scored 2 findings" in details
        and "top score" in details
        and "threshold score" in details
    )


# ---------------------------------------------------------------------------------- beyond the original


async def test_confidence_labels_and_ambiguity_reach_the_prompt(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    """Six memories about equally close (more than topK 5) with ``ambiguitySignal`` on: the prompt lists
    each retrieved finding with its confidence label and says the match is ambiguous; the telemetry row
    carries the cluster size."""
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        for axis in range(1, 7):
            seed_memory(h, 0.20 + axis * 0.001, axis, f"src/m{axis}.ts")
        config = "knowledge:\n  retrieval:\n    cutStrategy: maxgap\n    ambiguitySignal: true\n"
        pull = h.open_pr(config=config)
        await h.deliver(pull)
        prompt = h.prompts[0]
        assert "stored findings are about equally close to this PR" in prompt
        assert "confidence: high" in prompt
        rows = h.rows("telemetry.db", "SELECT ambiguity_cluster_size, confidence_high FROM retrieval_quality")
        assert rows and rows[0][0] == 6 and rows[0][1] >= 1
    finally:
        h.close()
