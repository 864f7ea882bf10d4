"""The dashboard under attack, over real HTTP: the app, the fake GitHub's OAuth and the seeded stores of
``test_dashboard_http`` (its ``dash`` fixture: one server for this module), with hostile text planted in
the stores (finding titles, a ``.kodiai.yml`` snapshot, a job's error, a cut method's name).

Sign-in and sessions (OAuth state, redirects, forged claims, fixation, sign-out), authorization (every
path into another repository's or installation's data), CSRF; output and headers are in
``test_dashboard_attacks_output``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from itsdangerous import URLSafeTimedSerializer
from pydantic import SecretStr
from test_dashboard_http import (  # noqa: F401  (dash: the fixture)
    OPERATOR_TOKEN,
    SESSION_KEY,
    Dash,
    _csrf,
    _options,
    _replica,
    dash,
)

from kodiai.learning.embeddings import NoopEmbeddingProvider
from kodiai.server.app import create_app
from kodiai.server.runtime import build_runtime
from kodiai.server.stores import Stores
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.telemetry import TelemetryStore
from support.db_backends import open_target
from support.live_server import LiveServer, make_config, make_github
from support.seed_dashboard import INSTALLATION

HOSTILE_TITLE = '=HYPERLINK("http://evil.example")<script>alert(1)</script>'
HOSTILE_CONFIG = '</pre><script>alert("cfg")</script>'
HOSTILE_ERROR = "<img src=x onerror=alert(1)>"
HOSTILE_METHOD = "<script>svg</script>"
WEB_ONLY_TITLE = "acme-web private finding title"
CSV_TITLES = {500: "@SUM(1+1)", 503: "+1+1", 504: "-1+1"}


def _write(path: Path, name: str, sql: str, params: tuple[object, ...] = ()) -> None:
    db = open_target(str(path), name)
    try:
        db.execute(sql, params)
    finally:
        db.close()


@pytest.fixture(scope="module")
def site(dash: Dash) -> Iterator[Dash]:  # noqa: F811  (the imported fixture)
    """The module's server with hostile text in its stores, planted before any page is read (the pages keep
    past days in memory). A memory of acme/web shown in acme/api's PR 1 (``knowledge.sharing``)."""
    knowledge = dash.tmp / "knowledge.db"
    _write(knowledge, "knowledge", "UPDATE findings SET title = ? WHERE comment_id = 501", (HOSTILE_TITLE,))
    _write(knowledge, "knowledge", "UPDATE findings SET title = ? WHERE comment_id = 502", (WEB_ONLY_TITLE,))
    for finding, title in CSV_TITLES.items():
        _write(knowledge, "knowledge", "UPDATE findings SET title = ? WHERE comment_id = ?", (title, finding))
    _write(knowledge, "knowledge", "UPDATE reviews SET config_snapshot = ? WHERE id = 1", (HOSTILE_CONFIG,))
    _write(
        knowledge,
        "knowledge",
        "INSERT INTO retrieval_hits (delivery_id, repo, pr_number, memory_id, finding_id, source_repo, outcome,"
        " distance, adjusted_distance, kept, kept_rank) SELECT delivery_id, repo, pr_number, 12, 502,"
        " 'acme/web', 'accepted', 0.2, 0.2, 1, 2 FROM retrieval_hits WHERE delivery_id = 'rv1' LIMIT 1",
    )
    telemetry = dash.tmp / "telemetry.db"
    _write(
        telemetry,
        "telemetry",
        "UPDATE retrieval_quality SET threshold_method = ? WHERE delivery_id = 'r1'",
        (HOSTILE_METHOD,),
    )
    _write(
        dash.tmp / "jobs.db",
        "jobs",
        "UPDATE delivery_journal SET error = ? WHERE delivery_id = 'job-dead-1'",
        (HOSTILE_ERROR,),
    )
    dash.oauth.add_user("carol", {INSTALLATION: {"acme/api": True}})
    yield dash


def _sessions(site: Dash, login: str) -> int:
    return len(site.knowledge_rows("SELECT sid_hash FROM dashboard_sessions WHERE login = ?", (login,)))


def _authorize(site: Dash, client: httpx.Client, login: str) -> str:
    """The callback URL GitHub sends ``client``'s browser back to (the sign-in not yet completed)."""
    site.oauth.next_login = login
    to_github = client.get("/dashboard/login")
    approved = httpx.get(to_github.headers["location"], timeout=10)
    assert approved.status_code == 302
    return str(approved.headers["location"])


# --- OAuth ---------------------------------------------------------------------------------------------


def test_oauth_state_is_bound_to_the_browser_that_started_the_sign_in(site: Dash) -> None:
    """Login CSRF: an attacker who starts a sign-in as themselves and hands the callback URL to a victim
    does not sign the victim in as the attacker; a missing, altered or replayed state is refused too."""
    before = _sessions(site, "bob")
    with (
        httpx.Client(base_url=site.url, timeout=10) as attacker,
        httpx.Client(base_url=site.url, timeout=10) as victim,
    ):
        callback = _authorize(site, attacker, "bob")
        victim.get("/dashboard/login")  # the victim has a state cookie of their own: it does not match
        for browser in (victim, httpx.Client(base_url=site.url, timeout=10)):
            with closing(browser):
                refused = browser.get(callback)
                assert refused.status_code == 403 and "kodiai_dashboard" not in refused.cookies
        query = parse_qs(urlsplit(callback).query)
        code = query["code"][0]
        for bad in (f"/dashboard/callback?code={code}", f"/dashboard/callback?code={code}&state=x"):
            assert attacker.get(bad).status_code == 403
        assert _sessions(site, "bob") == before
        done = attacker.get(callback)  # the attacker's own browser completes its own sign-in
        assert done.status_code == 303 and done.headers["location"] == "/dashboard/overview"
        assert attacker.get(callback).status_code == 403  # replayed: the state cookie is spent


def test_the_code_is_sent_as_data_and_a_refusal_echoes_no_secret(site: Dash) -> None:
    with httpx.Client(base_url=site.url, timeout=10) as browser:
        callback = _authorize(site, browser, "alice")
        state = parse_qs(urlsplit(callback).query)["state"][0]
        injected = browser.get(
            "/dashboard/callback",
            params={"code": "x&client_secret=evil&code=y", "state": state},
        )
        assert injected.status_code == 502
        assert "bad_verification_code" in injected.text
        assert "fake-oauth-client-secret" not in injected.text and "evil" not in injected.text
        assert injected.headers["content-type"].startswith("text/plain")


def test_redirects_never_leave_the_dashboard_whatever_the_host_or_a_next_url(site: Dash) -> None:
    """No ``next``/return URL is honoured, and nothing is built from the Host header: a request on a host
    the attacker controls still sends GitHub's user back to the callback registered with the App."""
    evil = {"Host": "evil.example"}
    with httpx.Client(base_url=site.url, timeout=10) as browser:
        site.oauth.next_login = "alice"
        to_github = browser.get(
            "/dashboard/login",
            params={"next": "https://evil.example/", "redirect_uri": "https://evil.example/"},
            headers=evil,
        )
        location = to_github.headers["location"]
        assert location.startswith(site.github_url + "/login/oauth/authorize?") and "evil" not in location
        approved = httpx.get(location, timeout=10)
        done = browser.get(approved.headers["location"] + "&next=https://evil.example/", headers=evil)
        assert done.status_code == 303 and done.headers["location"] == "/dashboard/overview"
        for path in ("/dashboard", "/dashboard/overview?next=//evil.example"):
            response = browser.get(path, headers=evil)
            assert "evil" not in response.headers.get("location", "")
        token = _csrf(browser.get("/dashboard/jobs"))
        out = browser.post(
            "/dashboard/logout", data={"csrf": token, "next": "https://evil.example/"}, headers=evil
        )
        assert out.status_code == 303 and out.headers["location"].startswith("/dashboard/")


# --- sessions ------------------------------------------------------------------------------------------


def test_a_cookie_claiming_more_than_its_session_row_is_refused(site: Dash) -> None:
    """Even signed with the real key, a cookie's claims must match its server-side row: alice's session
    id with ``op`` set (or another login) is no operator; an unknown session id is nobody."""
    with closing(site.sign_in("alice")) as alice:
        cookie = alice.cookies.get("kodiai_dashboard")
        assert cookie
        signer = URLSafeTimedSerializer(SESSION_KEY, salt="kodiai-dashboard-session")
        payload = signer.loads(cookie)
        for claims in (
            {**payload, "op": True},
            {**payload, "login": "operator", "op": True},
            {**payload, "login": "bob"},
            {"sid": "x" * 32, "login": "operator", "op": True},
        ):
            with httpx.Client(
                base_url=site.url, cookies={"kodiai_dashboard": signer.dumps(claims)}, timeout=10
            ) as forged:
                assert forged.get("/dashboard/jobs").status_code == 303
                assert forged.get("/dashboard/jobs/export/jobs.json").status_code == 401


def test_signing_in_issues_a_new_session_and_signing_out_revokes_it_server_side(site: Dash) -> None:
    """Session fixation: a session id planted in the victim's browser before sign-in is not the one the
    victim is signed in with. Sign-out deletes the row: the old cookie and its CSRF token are dead."""
    with closing(site.sign_in("bob")) as attacker, httpx.Client(base_url=site.url, timeout=10) as victim:
        planted = attacker.cookies.get("kodiai_dashboard")
        for planted_cookie in attacker.cookies.jar:  # the server's own name, domain and path
            victim.cookies.jar.set_cookie(planted_cookie)
        callback = _authorize(site, victim, "alice")
        victim.get(callback)
        cookie = victim.cookies.get("kodiai_dashboard")
        assert cookie and cookie != planted
        page = victim.get("/dashboard/jobs")
        assert "alice" in page.text and "bob" not in page.text
        token = _csrf(page)
        assert victim.post("/dashboard/logout", data={"csrf": token}).status_code == 303
        assert attacker.get("/dashboard/jobs").status_code == 303  # the browser's earlier session ended
    with httpx.Client(base_url=site.url, cookies={"kodiai_dashboard": cookie}, timeout=10) as replay:
        assert replay.get("/dashboard/jobs").status_code == 303
        assert replay.get("/dashboard/jobs/export/jobs.json").status_code == 401
        assert (
            replay.post(
                "/dashboard/jobs/retry", data={"csrf": token, "delivery_id": "job-dead-1"}
            ).status_code
            == 401
        )
    assert site.jobs_status("job-dead-1") == "dead"


# --- authorization -------------------------------------------------------------------------------------


def test_a_reader_reaches_none_of_the_repository_by_any_path(site: Dash) -> None:
    """bob may read acme/api but not push: every page, export and action refuses him its data."""
    with closing(site.sign_in("bob")) as bob:
        token = _csrf(bob.get("/dashboard/jobs"))
        query = {"repo": "acme/api", "pr": "1", "range": "90d", "installation": str(INSTALLATION)}
        for name in ("quiet-reviews", "quiet-memories", "quiet-suppressions", "quiet-retrievals"):
            assert bob.get(f"/dashboard/quiet/export/{name}.json", params=query).status_code == 404
        quiet = bob.get("/dashboard/quiet", params=query)
        assert "rv1" not in quiet.text and "Finding" not in quiet.text
        for repo in ("acme/api", "ACME/API", " acme/api"):
            page = bob.get("/dashboard/memory", params={**query, "repo": repo})
            assert "Finding" not in page.text and "@SUM" not in page.text
        assert (
            bob.post("/dashboard/jobs/retry", data={"csrf": token, "delivery_id": "job-dead-1"}).status_code
            == 403
        )
        for action in ("forget", "restore"):
            for repo in ("acme/api", "ACME/Api"):
                form = {"csrf": token, "repo": repo, "finding_id": "501"}
                assert bob.post(f"/dashboard/memory/{action}", data=form).status_code == 403
    assert site.jobs_status("job-dead-1") == "dead"
    assert site.knowledge_rows("SELECT * FROM memory_governance WHERE finding_id = 501") == []


def test_a_writer_cannot_reach_another_repository_or_installation(site: Dash) -> None:
    """alice pushes to acme/api only (installation 12345): acme/web's memory ids passed with acme/api do not
    touch acme/web, the other installation's dead job stays dead, and a memory of acme/web shown in an
    acme/api review (shared memory) is not described to her."""
    with closing(site.sign_in("alice")) as alice:
        token = _csrf(alice.get("/dashboard/jobs"))
        retry = alice.post("/dashboard/jobs/retry", data={"csrf": token, "delivery_id": "job-dead-other"})
        assert retry.status_code == 403
        for repo in ("acme/api", "ACME/API"):
            form = {"csrf": token, "repo": repo, "finding_id": "502"}  # acme/web's finding
            assert alice.post("/dashboard/memory/forget", data=form).status_code == 303
        forget_web = alice.post(
            "/dashboard/memory/forget", data={"csrf": token, "repo": "acme/web", "finding_id": "502"}
        )
        assert forget_web.status_code == 403
        quiet = alice.get("/dashboard/quiet", params={"repo": "acme/api", "pr": "1"})
        assert quiet.status_code == 200 and "rv1" in quiet.text
        assert WEB_ONLY_TITLE not in quiet.text and "acme/web" not in quiet.text
        hits = alice.get(
            "/dashboard/quiet/export/quiet-memories.json", params={"repo": "acme/api", "pr": "1"}
        )
        assert WEB_ONLY_TITLE not in hits.text and "acme/web" not in hits.text
        assert len(hits.json()["rows"]) == 3  # acme/web's row is listed, without its repository or title
    assert site.jobs_status("job-dead-other") == "dead"
    assert site.knowledge_rows("SELECT * FROM memory_governance WHERE finding_id = 502") == []
    with httpx.Client(
        base_url=site.url, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}, timeout=10
    ) as op:
        hits = op.get("/dashboard/quiet/export/quiet-memories.json", params={"repo": "acme/api", "pr": "1"})
        assert WEB_ONLY_TITLE in hits.text  # the operator sees every repository


def test_revoked_write_access_stops_counting_once_the_cached_list_is_older_than_five_minutes(
    site: Dash,
) -> None:
    with closing(site.sign_in("carol")) as carol:
        assert "acme/api" in carol.get("/dashboard/memory?range=90d").text
        site.oauth.users["carol"] = {INSTALLATION: {"acme/api": False}}  # GitHub: carol lost push
        assert "acme/api" in carol.get("/dashboard/memory?range=90d").text  # the cached list, < 5 minutes
        db = open_target(str(site.tmp / "knowledge.db"), "knowledge")
        try:  # five minutes pass
            db.execute("UPDATE dashboard_sessions SET access_at = access_at - 301 WHERE login = 'carol'")
        finally:
            db.close()
        page = carol.get("/dashboard/memory?range=90d")
        assert page.status_code == 200 and "acme/api" not in page.text
        form = {"csrf": _csrf(page), "repo": "acme/api", "finding_id": "501"}
        assert carol.post("/dashboard/memory/forget", data=form).status_code == 403
        site.oauth.tokens.clear()  # the user token revoked at GitHub: the next lookup signs carol out
        db = open_target(str(site.tmp / "knowledge.db"), "knowledge")
        try:
            db.execute("UPDATE dashboard_sessions SET access_at = 0 WHERE login = 'carol'")
        finally:
            db.close()
        assert carol.get("/dashboard/memory").status_code == 303
        assert _sessions(site, "carol") == 0


# --- CSRF ----------------------------------------------------------------------------------------------


def test_every_post_needs_the_token_of_its_own_session(site: Dash) -> None:
    with closing(site.sign_in("alice")) as alice, closing(site.sign_in("bob")) as bob:
        bobs = _csrf(bob.get("/dashboard/jobs"))
        forms = {
            "/dashboard/logout": {},
            "/dashboard/memory/forget": {"repo": "acme/api", "finding_id": "501"},
            "/dashboard/memory/restore": {"repo": "acme/api", "finding_id": "501"},
            "/dashboard/jobs/retry": {"delivery_id": "job-dead-1"},
        }
        for path, form in forms.items():
            for csrf in (None, "", bobs, "0" * 64):
                data = form if csrf is None else {**form, "csrf": csrf}
                assert alice.post(path, data=data).status_code == 403, (path, csrf)
            assert alice.get(path).status_code == 404  # no GET does what the POST does
        assert alice.get("/dashboard/jobs").status_code == 200  # not signed out
        assert alice.post("/dashboard/login", data={"token": OPERATOR_TOKEN, "csrf": bobs}).status_code == 403
    assert site.jobs_status("job-dead-1") == "dead"
    assert site.knowledge_rows("SELECT * FROM memory_governance WHERE finding_id = 501") == []


def test_an_action_message_cannot_be_forged_through_the_link(site: Dash) -> None:
    """The page shows the outcome of the viewer's own action, not text an attacker put in a link."""
    lure = "Your session expired: sign in again at https://evil.example/login"
    with closing(site.sign_in("alice")) as alice:
        for query in ({"message": lure}, {"message": lure, "sig": "0" * 64}):
            page = alice.get("/dashboard/jobs", params=query)
            assert page.status_code == 200 and "evil.example" not in page.text
        token = _csrf(alice.get("/dashboard/jobs"))
        done = alice.post(
            "/dashboard/memory/forget", data={"csrf": token, "repo": "acme/api", "finding_id": "999"}
        )
        assert done.status_code == 303 and done.headers["location"].startswith("/dashboard/memory?message=")
        shown = alice.get(done.headers["location"])
        assert "No finding 999 in acme/api" in shown.text
        with closing(site.sign_in("bob")) as bob:  # another session cannot replay alice's message link
            assert "No finding 999" not in bob.get(done.headers["location"]).text


# --- the operator token --------------------------------------------------------------------------------


def test_guessing_the_operator_token_is_throttled_per_client(site: Dash, tmp_path: Path) -> None:
    """After 10 wrong tokens in a minute from one address, that address is refused (429) even with the
    right token until the minute has passed; the wrong guesses are neither echoed nor logged."""
    with _replica(site, tmp_path / "throttle") as url, httpx.Client(base_url=url, timeout=10) as guesser:
        for i in range(10):
            wrong = guesser.get(
                "/dashboard/jobs/export/jobs.json", headers={"Authorization": f"Bearer guess-{i}"}
            )
            assert wrong.status_code == 401 and f"guess-{i}" not in wrong.text
        right = guesser.get(
            "/dashboard/jobs/export/jobs.json", headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}
        )
        assert right.status_code == 429 and int(right.headers["retry-after"]) > 0
        assert "frame-ancestors 'none'" in right.headers["content-security-policy"]
        form = guesser.get("/dashboard/login?operator=1")
        nonce = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert nonce
        signed = guesser.post("/dashboard/login", data={"token": OPERATOR_TOKEN, "csrf": nonce.group(1)})
        assert signed.status_code == 429
    with httpx.Client(base_url=site.url, timeout=10) as browser:  # a wrong token in the form is not echoed
        nonce = re.search(r'name="csrf" value="([^"]+)"', browser.get("/dashboard/login?operator=1").text)
        assert nonce
        refused = browser.post(
            "/dashboard/login", data={"token": "my-typo-of-the-token", "csrf": nonce.group(1)}
        )
        assert refused.status_code == 401 and "my-typo-of-the-token" not in refused.text


def test_changing_the_operator_token_ends_the_operator_sessions_signed_in_with_the_old_one(
    site: Dash, tmp_path: Path
) -> None:
    """A leaked operator token is rotated with ``DASHBOARD_SESSION_SECRET`` unchanged: the sessions signed in
    with the old token stop working (a restarted app over the same database, with the new token)."""
    with httpx.Client(base_url=site.url, timeout=10) as browser:
        nonce = re.search(r'name="csrf" value="([^"]+)"', browser.get("/dashboard/login?operator=1").text)
        assert nonce
        browser.post("/dashboard/login", data={"token": OPERATOR_TOKEN, "csrf": nonce.group(1)})
        cookie = browser.cookies.get("kodiai_dashboard")
        assert cookie and browser.get("/dashboard/jobs").status_code == 200
    stores = Stores(
        TelemetryStore(site.tmp / "telemetry.db"),
        KnowledgeStore(site.tmp / "knowledge.db"),
        NoopEmbeddingProvider(),
    )
    runtime = build_runtime(
        make_config(tmp_path, site.github_url), github=make_github(site.github), stores=stores
    )
    rotated = replace(_options(site.github_url), token=SecretStr("a-new-operator-token-0123456789abcdef"))
    server = LiveServer(create_app(runtime, dashboard=rotated)).start()
    try:
        with httpx.Client(base_url=server.url, cookies={"kodiai_dashboard": cookie}, timeout=10) as old:
            assert old.get("/dashboard/jobs").status_code == 303
            assert old.get("/dashboard/jobs/export/jobs.json").status_code == 401
    finally:
        server.stop()
    with httpx.Client(base_url=site.url, cookies={"kodiai_dashboard": cookie}, timeout=10) as same:
        assert same.get("/dashboard/jobs").status_code == 200  # the unchanged app still accepts it
