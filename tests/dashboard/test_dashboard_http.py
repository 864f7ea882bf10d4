"""The dashboard over real HTTP: the Kodiai app on loopback (uvicorn), GitHub sign-in through the fake
GitHub's OAuth endpoints, seeded SQLite stores. One server for the module; each test signs in afresh."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from itsdangerous import TimestampSigner, URLSafeTimedSerializer
from pydantic import SecretStr

from kodiai.dashboard.options import DashboardOptions
from kodiai.learning.embeddings import NoopEmbeddingProvider
from kodiai.server.app import create_app
from kodiai.server.runtime import build_runtime
from kodiai.server.stores import Stores
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.telemetry import TelemetryStore
from support.db_backends import open_target
from support.fake_github import FakeGitHub
from support.fake_github_oauth import CLIENT_ID, CLIENT_SECRET, FakeOAuth
from support.live_server import LiveServer, make_config, make_github
from support.seed_dashboard import INSTALLATION, OTHER_INSTALLATION, seed_dashboard, seed_jobs

OPERATOR_TOKEN = "operator-token-for-tests-0123456789"
SESSION_KEY = "dashboard-session-key-for-tests"
SESSION_SECONDS = 8 * 3600


@dataclass
class Dash:
    url: str
    oauth: FakeOAuth
    tmp: Path
    github: FakeGitHub

    @property
    def github_url(self) -> str:
        return str(self.github.url)

    def knowledge_rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        db = open_target(str(self.tmp / "knowledge.db"), "knowledge")
        try:
            return [dict(r) for r in db.query(sql, params)]
        finally:
            db.close()

    def jobs_status(self, delivery: str) -> str:
        db = open_target(str(self.tmp / "jobs.db"), "jobs")
        try:
            row = db.fetch_one("SELECT status FROM delivery_journal WHERE delivery_id = ?", (delivery,))
        finally:
            db.close()
        return str(row[0]) if row else ""

    def sign_in(self, login: str) -> httpx.Client:
        """Sign in as ``login`` the way a browser does: dashboard → GitHub authorize → callback."""
        client = httpx.Client(base_url=self.url, timeout=10)
        self.oauth.next_login = login
        to_github = client.get("/dashboard/login")
        assert to_github.status_code == 302, to_github.text
        approved = httpx.get(to_github.headers["location"], timeout=10)
        assert approved.status_code == 302
        assert approved.headers["location"].startswith(self.url + "/dashboard/callback?")
        done = client.get(approved.headers["location"])
        assert done.status_code == 303, done.text
        assert done.headers["location"] == "/dashboard/overview"
        return client


@pytest.fixture(scope="module")
def dash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dash]:
    tmp = tmp_path_factory.mktemp("dashboard")
    seed_dashboard(str(tmp / "telemetry.db"), str(tmp / "knowledge.db"), None)
    with FakeGitHub() as fake:
        fake.add_installation(INSTALLATION)
        oauth = FakeOAuth(fake, callback="")
        oauth.add_user("alice", {INSTALLATION: {"acme/api": True, "acme/web": False}})
        oauth.add_user("bob", {INSTALLATION: {"acme/api": False}})
        stores = Stores(
            TelemetryStore(tmp / "telemetry.db"),
            KnowledgeStore(tmp / "knowledge.db"),
            NoopEmbeddingProvider(),
        )
        runtime = build_runtime(make_config(tmp, fake.url), github=make_github(fake), stores=stores)
        server = LiveServer(create_app(runtime, dashboard=_options(fake.url))).start()
        try:
            seed_jobs(str(tmp / "jobs.db"))
            oauth.callback = server.url + "/dashboard/callback"
            yield Dash(server.url, oauth, tmp, fake)
        finally:
            server.stop()


def _options(github_url: str, key: str = SESSION_KEY) -> DashboardOptions:
    return DashboardOptions(
        client_id=CLIENT_ID,
        client_secret=SecretStr(CLIENT_SECRET),
        token=SecretStr(OPERATOR_TOKEN),
        session_key=SecretStr(key),
        api_url=github_url,
    )


@contextmanager
def _replica(dash: Dash, tmp: Path, key: str = SESSION_KEY) -> Iterator[str]:
    """Another Kodiai web app over the same stores (a second replica, or the first one restarted)."""
    stores = Stores(
        TelemetryStore(dash.tmp / "telemetry.db"),
        KnowledgeStore(dash.tmp / "knowledge.db"),
        NoopEmbeddingProvider(),
    )
    runtime = build_runtime(make_config(tmp, dash.github_url), github=make_github(dash.github), stores=stores)
    server = LiveServer(create_app(runtime, dashboard=_options(dash.github_url, key))).start()
    try:
        yield server.url
    finally:
        server.stop()


def _csrf(page: httpx.Response) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text)
    assert match, "no CSRF token in the page"
    return match.group(1)


def test_pages_render_the_seeded_figures_for_a_writer(dash: Dash) -> None:
    with closing(dash.sign_in("alice")) as alice:
        overview = alice.get("/dashboard/overview?range=90d")
        assert overview.status_code == 200
        assert re.search(r'id="fig-reviews">2<', overview.text)  # acme/api's 2 reviews, not acme/web's
        assert "<svg" in overview.text and "<title" in overview.text and "<desc" in overview.text
        csp = overview.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "style-src 'self'" in csp and "script" not in csp
        assert "<script" not in overview.text and "style=" not in overview.text
        retrieval = alice.get("/dashboard/retrieval?range=90d")
        assert retrieval.status_code == 200 and 'id="fig-retrievals">' in retrieval.text
        memory = alice.get("/dashboard/memory?range=90d")
        assert memory.status_code == 200
        assert "33.3 % (6)" in memory.text  # finding 501: 2 👍, 4 👎
        assert "acme/web" not in memory.text
        quiet = alice.get("/dashboard/quiet", params={"repo": "acme/api", "pr": "1"})
        assert quiet.status_code == 200 and "rv1" in quiet.text and "503" in quiet.text
        jobs = alice.get("/dashboard/jobs")
        assert "job-dead-1" in jobs.text and "job-dead-other" not in jobs.text
        mine = alice.get(f"/dashboard/overview?range=90d&installation={INSTALLATION}")
        assert re.search(r'id="fig-reviews">2<', mine.text)
        theirs = alice.get(f"/dashboard/jobs/export/jobs.json?installation={OTHER_INSTALLATION}").json()
        assert theirs["rows"] == []
        css = alice.get("/dashboard/static/dashboard.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        exported = alice.get("/dashboard/memory/export/memory-all.json?range=90d").json()
        assert {r["finding_id"] for r in exported["rows"]} == {500, 501, 503, 504}


def test_user_without_write_access_sees_none_of_the_repository(dash: Dash) -> None:
    with closing(dash.sign_in("bob")) as bob:
        for path in ("/dashboard/overview", "/dashboard/retrieval", "/dashboard/memory", "/dashboard/jobs"):
            page = bob.get(path, params={"range": "90d", "repo": "acme/api"})
            assert page.status_code == 200
            assert "Finding 1" not in page.text and "job-dead-1" not in page.text
        assert re.search(r'id="fig-reviews">0<', bob.get("/dashboard/overview?range=90d").text)
        quiet = bob.get("/dashboard/quiet", params={"repo": "acme/api", "pr": "1"})
        assert "rv1" not in quiet.text and "No data" in quiet.text
        for name in ("memory-all", "memory-top", "memory-by-repo", "memory-never-retrieved"):
            assert bob.get(f"/dashboard/memory/export/{name}.json?range=90d").json()["rows"] == []
            csv = bob.get(f"/dashboard/memory/export/{name}.csv?range=90d&repo=acme/api").text
            assert csv.count("\r\n") == 1  # the header only
        assert bob.get("/dashboard/jobs/export/jobs.json").json()["rows"] == []
    with closing(
        dash.sign_in("alice")
    ) as alice:  # a writer of acme/api asking for acme/web gets nothing either
        rows = alice.get("/dashboard/overview/export/overview-by-repo.json?range=90d&repo=acme/web").json()
        assert rows["rows"] == []
        assert "rv3" not in alice.get("/dashboard/quiet", params={"repo": "acme/web", "pr": "3"}).text


def test_forged_or_expired_session_cookie_is_refused(dash: Dash) -> None:
    alice = dash.sign_in("alice")
    cookie = alice.cookies.get("kodiai_dashboard")
    assert cookie and alice.get("/dashboard/memory").status_code == 200
    payload = URLSafeTimedSerializer(SESSION_KEY, salt="kodiai-dashboard-session").loads(cookie)
    assert isinstance(payload, dict) and payload["login"] == "alice"
    alice.close()

    class Old(TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time()) - SESSION_SECONDS - 60

    expired = URLSafeTimedSerializer(SESSION_KEY, salt="kodiai-dashboard-session", signer=Old).dumps(payload)
    forged = URLSafeTimedSerializer("not-the-key", salt="kodiai-dashboard-session").dumps(
        {"sid": payload.get("sid"), "login": "alice", "op": True}
    )
    tampered = cookie[:-3] + ("AAA" if not cookie.endswith("AAA") else "BBB")
    for bad in (expired, forged, tampered):
        with httpx.Client(base_url=dash.url, cookies={"kodiai_dashboard": bad}, timeout=10) as client:
            page = client.get("/dashboard/memory")
            assert page.status_code == 303 and page.headers["location"] == "/dashboard/login"
            assert client.get("/dashboard/memory/export/memory-all.json").status_code == 401


def test_a_session_from_one_replica_is_accepted_by_another_and_signed_out_everywhere(
    dash: Dash, tmp_path: Path
) -> None:
    alice = dash.sign_in("alice")
    cookie = alice.cookies.get("kodiai_dashboard")
    assert cookie
    rows = dash.knowledge_rows("SELECT login, user_token FROM dashboard_sessions WHERE login = 'alice'")
    assert rows and all(r["user_token"] and "gho_" not in r["user_token"] for r in rows)  # sealed, not plain
    with (
        _replica(dash, tmp_path / "b") as other,
        _replica(dash, tmp_path / "c", key="another-key") as stranger,
    ):
        with httpx.Client(base_url=other, cookies={"kodiai_dashboard": cookie}, timeout=10) as b:
            memory = b.get("/dashboard/memory?range=90d")
            assert memory.status_code == 200 and "acme/api" in memory.text and "acme/web" not in memory.text
            with httpx.Client(base_url=stranger, cookies={"kodiai_dashboard": cookie}, timeout=10) as c:
                assert c.get("/dashboard/memory").status_code == 303  # signed with another key: refused
            assert b.post("/dashboard/logout", data={"csrf": _csrf(memory)}).status_code == 303
        assert alice.get("/dashboard/memory").status_code == 303  # signed out on every replica
    alice.close()
    bob = dash.sign_in("bob")
    assert bob.get("/dashboard/jobs").status_code == 200
    db = open_target(str(dash.tmp / "knowledge.db"), "knowledge")
    try:  # the server-side record ends the session even while the cookie's signature is still young
        db.execute("UPDATE dashboard_sessions SET expires_at = 1 WHERE login = 'bob'")
    finally:
        db.close()
    assert bob.get("/dashboard/jobs").status_code == 303
    bob.close()


def test_post_without_csrf_token_is_refused(dash: Dash) -> None:
    with closing(dash.sign_in("alice")) as alice:
        for form in (
            {"repo": "acme/api", "finding_id": "503"},
            {"repo": "acme/api", "finding_id": "503", "csrf": "0" * 64},
        ):
            assert alice.post("/dashboard/memory/forget", data=form).status_code == 403
        assert alice.post("/dashboard/jobs/retry", data={"delivery_id": "job-dead-1"}).status_code == 403
    assert dash.knowledge_rows("SELECT * FROM memory_governance WHERE finding_id = 503") == []
    assert dash.jobs_status("job-dead-1") == "dead"


def test_forget_refused_for_a_reader_and_recorded_for_a_writer(dash: Dash) -> None:
    with closing(dash.sign_in("bob")) as bob:
        token = _csrf(bob.get("/dashboard/jobs"))  # bob has a session, and its token, but no write access
        refused = bob.post(
            "/dashboard/memory/forget", data={"repo": "acme/api", "finding_id": "500", "csrf": token}
        )
        assert refused.status_code == 403
    assert dash.knowledge_rows("SELECT * FROM memory_governance WHERE finding_id = 500") == []
    with closing(dash.sign_in("alice")) as alice:
        token = _csrf(alice.get("/dashboard/memory?range=90d"))
        done = alice.post(
            "/dashboard/memory/forget", data={"repo": "acme/api", "finding_id": "500", "csrf": token}
        )
        assert done.status_code == 303
        assert "forgotten" in alice.get("/dashboard/memory?range=90d").text
    rows = dash.knowledge_rows(
        "SELECT repo, action, actor, text FROM memory_governance WHERE finding_id = 500"
    )
    assert rows == [{"repo": "acme/api", "action": "forget", "actor": "alice", "text": "Finding 0"}]

    # restore: refused for a reader, recorded for a writer (this app has no memory store: a worker applies it)
    with closing(dash.sign_in("bob")) as bob:
        form = {"repo": "acme/api", "finding_id": "500", "csrf": _csrf(bob.get("/dashboard/jobs"))}
        assert bob.post("/dashboard/memory/restore", data=form).status_code == 403
    with closing(dash.sign_in("alice")) as alice:
        page = alice.get("/dashboard/memory?range=90d")
        assert (
            "pending: a worker removes them" in page.text
            and 'action="/dashboard/memory/restore"' in page.text
        )
        form = {"repo": "acme/api", "finding_id": "500", "csrf": _csrf(page)}
        assert alice.post("/dashboard/memory/restore", data={**form, "csrf": "0" * 64}).status_code == 403
        done = alice.post("/dashboard/memory/restore", data=form)
        assert done.status_code == 303 and "Restored%20finding%20500" in done.headers["location"]
    rows = dash.knowledge_rows(
        "SELECT restored_by, applied_at FROM memory_governance WHERE finding_id = 500 AND restored_at IS NOT NULL"
    )
    assert rows == [{"restored_by": "alice", "applied_at": None}]


def test_operator_token_sees_everything_and_retries_a_dead_job(dash: Dash) -> None:
    bearer = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
    with httpx.Client(base_url=dash.url, headers=bearer, timeout=10) as op:
        jobs = op.get("/dashboard/jobs/export/jobs.json").json()["rows"]
        assert {r["installation_id"] for r in jobs} == {INSTALLATION, OTHER_INSTALLATION}
        other = op.get(f"/dashboard/jobs/export/jobs.json?installation={OTHER_INSTALLATION}").json()["rows"]
        assert [r["delivery_id"] for r in other] == ["job-dead-other"]
        # the spend ledger knows installation 12345's repository (acme/api), not acme/web
        repos = op.get(
            f"/dashboard/overview/export/overview-by-repo.json?range=90d&installation={INSTALLATION}"
        )
        assert [r["repository"] for r in repos.json()["rows"]] == ["acme/api"]
        retried = op.post("/dashboard/jobs/retry", data={"delivery_id": "job-dead-other"})
        assert retried.status_code == 303 and "Requeued%20job-dead-other" in retried.headers["location"]
        # the server claims a requeued row within seconds (this seeded one has no body, so it dies again)
        assert (
            op.post("/dashboard/jobs/retry", data={"delivery_id": "job-done-1"})
            .headers["location"]
            .startswith("/dashboard/jobs?message=Not%20requeued")
        )
    with httpx.Client(base_url=dash.url, headers={"Authorization": "Bearer wrong"}, timeout=10) as wrong:
        assert wrong.get("/dashboard/jobs/export/jobs.json").status_code == 401
    with httpx.Client(base_url=dash.url, timeout=10) as browser:  # the sign-in form
        form = browser.get("/dashboard/login?operator=1")
        nonce = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert nonce
        assert browser.post("/dashboard/login", data={"token": OPERATOR_TOKEN}).status_code == 403
        signed = browser.post("/dashboard/login", data={"token": OPERATOR_TOKEN, "csrf": nonce.group(1)})
        assert signed.status_code == 303
        assert "acme/web" in browser.get("/dashboard/overview?range=90d").text
