"""The daily spend cap, end to end: ``kodiai serve`` (a real process) with ``SPEND_CAP_USD_PER_DAY`` set
refuses a signed ``pull_request`` webhook of an installation that already spent its cap today: no model
call, one notice on the PR, a ledger row, and the refusal in ``/metrics``.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from stack import INSTALLATION, OWNER, REPO, pull_payload

from kodiai.storage.telemetry import SpendEntry, TelemetryStore
from support.fake_anthropic import FakeAnthropic
from support.fake_github import FakeGitHub
from support.fake_github_git import install_git_routes
from support.fake_github_pr import install_pr_routes
from support.gitrepo import BareRepo
from support.kodiai_process import KodiaiProcess

pytestmark = pytest.mark.slow


def test_a_webhook_over_the_daily_cap_is_refused_with_a_notice_and_counted(tmp_path: Path) -> None:
    store = TelemetryStore(tmp_path / "telemetry.db")  # earlier today, the installation spent $1.25
    store.record_spend(
        SpendEntry(
            created_at=datetime.now(UTC),
            installation_id=INSTALLATION,
            repo=f"{OWNER}/{REPO}",
            number=1,
            kind="review",
            outcome="run",
            cost_usd=1.25,
        )
    )
    store.close()
    with FakeGitHub() as fake, FakeAnthropic() as model:
        state = install_pr_routes(fake)
        install_git_routes(fake, tmp_path / "git")
        fake.add_installation(INSTALLATION, account=OWNER)
        fake.add_repo(OWNER, REPO, installation_id=INSTALLATION)
        state.set_permission(OWNER, REPO, "alice", "write")
        repo = BareRepo(tmp_path / "git", OWNER, REPO)
        base = repo.commit({"README.md": "# widgets\n", "src/app.py": "x = 1\n"}, "base")
        head = repo.commit({"src/app.py": "x = 2\n"}, "change", branch="pr-2")
        state.add_pull(OWNER, REPO, 2, head_sha=head)
        server = KodiaiProcess(
            tmp_path, fake, model, SPEND_CAP_USD_PER_DAY="1", EMBEDDING_PROVIDER="none"
        ).start()
        try:
            payload = pull_payload(repo, 2, head_sha=head, base_sha=base, branch="pr-2", title="Change x")
            assert server.deliver(payload).status_code == 200
            (refusal,) = server.wait_for_log("Run refused by the daily spend cap", prNumber=2)
            server.wait_for_log("Review job finished", prNumber=2)
            metrics = server.metrics()
        finally:
            server.stop()
        notices = [
            c["body"] for c in state.issue_comments(OWNER, REPO, 2) if "kodiai:spend-cap:" in c["body"]
        ]
    assert (refusal["level"], refusal["reason"], refusal["spentUsd"], refusal["capUsd"]) == (
        "warning",
        "installation-cap",
        1.25,
        1.0,
    )
    assert model.main_requests == [], "Claude was never started"
    (notice,) = notices
    assert (
        "daily spend cap is reached" in notice
        and "has spent $1.25 today (UTC); its daily cap is $1.00" in notice
    )
    assert 'kodiai_spend_cap_refusals_total{kind="review",reason="installation-cap"} 1.0' in metrics
    assert "kodiai_spend_today_usd{installation=" in metrics
    conn = sqlite3.connect(tmp_path / "telemetry.db")
    try:
        rows = list(conn.execute("SELECT installation_id, number, kind, outcome, reason FROM spend_ledger"))
    finally:
        conn.close()
    assert rows[-1] == (INSTALLATION, 2, "review", "refused", "installation-cap")
