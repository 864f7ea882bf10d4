"""Dependency-bump merge history (behaviour R1 step 56, checklist R4.4 DM-01, DM-02).

Real components: the router and job lanes with the built-in handlers, the fake GitHub over HTTP (PR
files and advisories), a SQLite knowledge store. The npm registry is faked (an outside service), as
in the review's dep-bump tests.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import APIRouter, Request
from test_review_dep_bump import npm_registry

from kodiai.review.dep_bumps.enrichment import AdvisoryInfo, SecurityContext
from kodiai.review.dep_bumps.history import advisory_max_severity, advisory_status
from kodiai.server.handlers import BUILTIN
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.pr_payloads import pull_request_payload
from support.review_harness import INSTALLATION, OWNER, REPO, ReviewHarness

FILES_PATH = rf"/repos/{OWNER}/{REPO}/pulls/\d+/files"
ADVISORIES: dict[str, list[dict[str, Any]]] = {}
"""``affects`` query (``lodash@4.17.21``) → the advisories the fake GitHub answers."""


@pytest.fixture(scope="module", autouse=True)
def advisories_on_fake_github(fake_server: tuple[FakeGitHub, PrState]) -> Iterator[None]:
    fake, _state = fake_server
    router = APIRouter()

    @router.get("/advisories")
    async def advisories(request: Request) -> list[dict[str, Any]]:
        return ADVISORIES.get(request.query_params.get("affects", ""), [])

    fake.register(router)
    yield


@pytest.fixture
def make(tmp_path: Path, harness: ReviewHarness) -> Iterator[Any]:
    built: list[ReviewHarness] = []
    ADVISORIES.clear()

    def build(**kwargs: Any) -> ReviewHarness:
        assert not built, "one harness per test"
        kwargs.setdefault("registry", npm_registry)
        built.append(ReviewHarness(tmp_path / "dm", harness.fake, harness.state, handlers=BUILTIN, **kwargs))
        return built[0]

    yield build
    ADVISORIES.clear()
    for h in built:
        h.close()


def advisory(ghsa: str, severity: str) -> dict[str, Any]:
    return {
        "ghsa_id": ghsa,
        "type": "reviewed",
        "severity": severity,
        "summary": "Prototype pollution",
        "vulnerabilities": [
            {
                "package": {"name": "lodash", "ecosystem": "npm"},
                "vulnerable_version_range": "< 4.17.22",
                "first_patched_version": "4.17.22",
            }
        ],
    }


async def close_pr(
    h: ReviewHarness,
    number: int,
    *,
    title: str,
    author: str,
    head_ref: str = "feature",
    merged: bool = True,
    files: list[str] | None = None,
    labels: tuple[str, ...] = (),
    delivery: str | None = None,
) -> None:
    pull = h.state.add_pull(
        OWNER,
        REPO,
        number,
        title=title,
        body="Bumps stuff.",
        author=author,
        author_type="Bot" if author.endswith("[bot]") else "User",
        head_ref=head_ref,
        labels=labels,
        files=files or ["package.json"],
        state="closed",
        merged=merged,
        merged_at="2026-03-01T10:00:00Z" if merged else None,
    )
    payload = pull_request_payload("closed", pull, installation_id=INSTALLATION, sender="maintainer")
    outcome = await h.deliver_event("pull_request", payload, delivery=delivery)
    assert outcome.failed == 0, outcome


def history(h: ReviewHarness) -> list[dict[str, Any]]:
    conn = sqlite3.connect(h.tmp / "knowledge.db")
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM dep_bump_merge_history ORDER BY id")]
    finally:
        conn.close()


# ---------------------------------------------------------------------- checklist R4.4
async def test_dm_01_merged_dependabot_bump_is_recorded_even_when_list_files_fails(make: Any) -> None:
    h = make()
    h.fake.fail(404, method="GET", path=r"/pulls/22/files$")
    ADVISORIES["lodash@4.17.21"] = [advisory("GHSA-aaaa", "HIGH"), advisory("GHSA-bbbb", "medium")]

    await close_pr(
        h,
        22,
        title="Bump lodash from 4.17.21 to 4.17.22",
        author="dependabot[bot]",
        head_ref="dependabot/npm_and_yarn/lodash-4.17.22",
        delivery="delivery-dep-bump-1",
    )

    [row] = history(h)
    assert (row["repo"], row["pr_number"], row["delivery_id"]) == ("acme/repo", 22, "delivery-dep-bump-1")
    assert h.logged("could not list PR files")[0]["log_level"] == "warning"
    assert row["merged_at"] == "2026-03-01T10:00:00Z"
    assert (row["source"], json.loads(row["signals_json"])) == ("dependabot", ["title", "branch", "sender"])
    assert (row["package_name"], row["old_version"], row["new_version"], row["semver_bump_type"]) == (
        "lodash",
        "4.17.21",
        "4.17.22",
        "patch",
    )
    # The advisories affect the old version only: a security bump, graded by the worst severity.
    assert (row["advisory_status"], row["advisory_max_severity"], row["is_security_bump"]) == (
        "present",
        "high",
        1,
    )
    assert row["merge_confidence_level"] == "high"
    assert json.loads(row["merge_confidence_rationale_json"]) == [
        "Patch version bump (bug fix only)",
        "Security-motivated bump (patches known vulnerability)",
    ]
    [queued] = [e for e in h.logged("Enqueuing job") if e.get("jobType") == "dep-bump-merge-history"]
    assert queued["prNumber"] == 22


async def test_dm_02_merged_non_bump_is_not_recorded(make: Any) -> None:
    h = make()
    await close_pr(h, 23, title="Fix docs", author="alice")

    assert history(h) == []
    assert h.calls("GET", FILES_PATH) == []


# ---------------------------------------------------------------------- gates and details
async def test_closed_without_merge_is_not_recorded(make: Any) -> None:
    h = make()
    await close_pr(
        h,
        24,
        title="Bump lodash from 4.17.21 to 4.17.22",
        author="dependabot[bot]",
        head_ref="dependabot/npm_and_yarn/lodash-4.17.22",
        merged=False,
    )

    assert history(h) == []
    assert not [e for e in h.logged("Enqueuing job") if e.get("jobType") == "dep-bump-merge-history"]


async def test_no_knowledge_store_means_no_job(make: Any) -> None:
    h = make(knowledge=False)
    await close_pr(
        h,
        25,
        title="Bump lodash from 4.17.21 to 4.17.22",
        author="dependabot[bot]",
        head_ref="dependabot/npm_and_yarn/lodash-4.17.22",
    )

    assert not h.logged("Enqueuing job") and h.calls("GET", FILES_PATH) == []


async def test_files_give_the_ecosystem_and_first_write_wins(make: Any) -> None:
    """Renovate branch names carry no ecosystem: the PR's files do (``go.mod`` → go, no advisories)."""
    h = make()
    for delivery in ("first", "second"):
        await close_pr(
            h,
            26,
            title="Update dependency golang.org/x/net to v0.30.0",
            author="renovate[bot]",
            head_ref="renovate/golang.org-x-net-0.x",
            files=["go.mod", "go.sum"],
            delivery=delivery,
        )

    [row] = history(h)
    assert row["delivery_id"] == "first"
    assert (row["source"], row["package_name"], row["new_version"]) == (
        "renovate",
        "golang.org/x/net",
        "0.30.0",
    )
    assert len(h.calls("GET", FILES_PATH)) == 2
    # go has an ecosystem, so the advisories were asked for (none known): ``none``, not ``unknown``.
    assert (row["advisory_status"], row["is_security_bump"]) == ("none", 0)
    assert "ecosystem=go" in h.calls("GET", r"/advisories")[0].query


async def test_without_an_ecosystem_there_is_no_enrichment(make: Any) -> None:
    h = make()
    await close_pr(
        h,
        27,
        title="Bump lodash from 4.17.21 to 4.17.22",
        author="dependabot[bot]",
        head_ref="deps/lodash",
        labels=("dependencies",),
        files=["vendor/lodash.js"],
    )

    [row] = history(h)
    assert row["package_name"] == "lodash"
    assert (row["advisory_status"], row["advisory_max_severity"], row["is_security_bump"]) == (
        "unknown",
        None,
        None,
    )
    assert h.calls("GET", r"/advisories") == []
    assert json.loads(row["merge_confidence_rationale_json"]) == ["Patch version bump (bug fix only)"]


def _security(*severities: str, bump: bool = False) -> SecurityContext:
    return SecurityContext(
        advisories=[AdvisoryInfo(ghsa_id=f"GHSA-{i}", severity=s) for i, s in enumerate(severities)],
        is_security_bump=bump,
    )


@pytest.mark.parametrize(
    ("security", "status", "worst"),
    [
        (None, "unknown", None),
        (_security(), "none", None),
        (_security("low", "Critical", "high"), "present", "critical"),
        (_security("MEDIUM", "low"), "present", "medium"),
        (_security("unknown"), "present", None),
    ],
)
def test_advisory_status_and_max_severity(
    security: SecurityContext | None, status: str, worst: str | None
) -> None:
    assert advisory_status(security) == status
    assert advisory_max_severity(security) == worst
