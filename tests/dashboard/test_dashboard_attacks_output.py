"""The dashboard under attack, over real HTTP: what it writes back. Hostile text from the stores and from
the query string escaped in pages and SVG charts, CSV cells that a spreadsheet would run as formulas,
security headers on every kind of response (errors included), abusive query parameters, the 404 of an
unconfigured dashboard on every path, and no secret in the logs. The hostile stores are
``test_dashboard_attacks``'s ``site``."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest
import structlog
import test_dashboard_attacks as attacks
import test_dashboard_http as http_tests
from test_dashboard_attacks import CSV_TITLES, HOSTILE_TITLE
from test_dashboard_http import OPERATOR_TOKEN, SESSION_KEY, Dash, _replica

from kodiai.dashboard.options import DashboardOptions
from kodiai.learning.embeddings import NoopEmbeddingProvider
from kodiai.server.app import create_app
from kodiai.server.runtime import build_runtime
from kodiai.server.stores import Stores
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.telemetry import TelemetryStore
from support.db_backends import open_target
from support.fake_github import FakeGitHub
from support.fake_github_oauth import CLIENT_ID, CLIENT_SECRET
from support.live_server import LiveServer, make_config, make_github

dash = http_tests.dash  # the fixtures: this module's own server over the same hostile stores
site = attacks.site
BEARER = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self';"
    " frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


@pytest.fixture
def operator(site: Dash) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=site.url, headers=BEARER, timeout=10) as client:
        yield client


def _no_markup_from_data(html: str) -> None:
    for raw in ("<script", "<img", "<svg onload", "<b>"):
        assert raw not in html, raw


def test_hostile_text_is_escaped_in_pages_and_charts(site: Dash, operator: httpx.Client) -> None:
    pages = {
        "/dashboard/memory?range=90d": "=HYPERLINK(&#34;http://evil.example&#34;)&lt;script&gt;alert(1)",
        "/dashboard/quiet?repo=acme/api&pr=1": "&lt;/pre&gt;&lt;script&gt;alert(&#34;cfg&#34;)",
        "/dashboard/jobs": "&lt;img src=x onerror=alert(1)&gt;",
        "/dashboard/retrieval?range=90d": "&lt;script&gt;svg&lt;/script&gt;",
    }
    for path, escaped in pages.items():
        page = operator.get(path)
        assert page.status_code == 200 and escaped in page.text, path
        _no_markup_from_data(page.text)
    chart = operator.get("/dashboard/retrieval?range=90d").text
    desc = re.search(r"<desc id=\"rq-d\">([^<]*)</desc>", chart)
    assert desc and "&lt;script&gt;svg" in desc.group(1)  # the SVG's text alternative, escaped
    reflected = operator.get(
        "/dashboard/overview",
        params={"repo": '"><script>x</script>', "installation": "<b>", "range": "<svg onload=1>"},
    )
    assert reflected.status_code in (200, 400)
    _no_markup_from_data(reflected.text)
    for path in ("/dashboard/quiet", "/dashboard/jobs"):
        page = operator.get(
            path, params={"repo": "<script>x</script>", "pr": "<svg onload=1>", "status": "<b>"}
        )
        _no_markup_from_data(page.text)
    with closing(site.sign_in("alice")) as alice:
        _no_markup_from_data(alice.get("/dashboard/memory?range=90d").text)


def test_csv_cells_never_start_a_formula(operator: httpx.Client) -> None:
    exported = operator.get("/dashboard/memory/export/memory-all.csv?range=90d")
    assert exported.headers["content-type"].startswith("text/csv")
    assert exported.headers["content-disposition"] == 'attachment; filename="memory-all.csv"'
    rows = list(csv.reader(io.StringIO(exported.text)))
    titles = {row[rows[0].index("finding_id")]: row[rows[0].index("title")] for row in rows[1:]}
    assert titles["501"] == "'" + HOSTILE_TITLE
    for finding, title in CSV_TITLES.items():
        assert titles[str(finding)] == "'" + title
    for row in rows[1:]:
        assert all(cell[:1] not in ("=", "+", "-", "@", "\t", "\r") for cell in row), row
    data = operator.get("/dashboard/memory/export/memory-all.json?range=90d").json()  # JSON is data: as is
    assert {r["title"] for r in data["rows"]} >= {HOSTILE_TITLE, *CSV_TITLES.values()}
    quiet = operator.get("/dashboard/quiet/export/quiet-memories.csv?repo=acme/api&pr=1").text
    assert "'" + HOSTILE_TITLE.replace('"', '""') in quiet


def _assert_headers(response: httpx.Response, *, store: bool = False) -> None:
    for name, value in HEADERS.items():
        assert response.headers.get(name) == value, (response.request.url, response.status_code, name)
    if not store:
        assert response.headers.get("cache-control") == "no-store", (
            response.request.url,
            response.status_code,
        )


def test_every_response_carries_the_security_headers(site: Dash, tmp_path: Path) -> None:
    """Pages, exports, redirects, every refusal and error (500 included), and the stylesheet."""
    with closing(site.sign_in("alice")) as alice, httpx.Client(base_url=site.url, timeout=10) as anonymous:
        responses = [
            alice.get("/dashboard/overview"),
            alice.get("/dashboard/memory/export/memory-top.csv"),
            alice.get("/dashboard/jobs/export/jobs.json"),
            alice.get("/dashboard/jobs/export/nope.json"),
            alice.get("/dashboard/no-such-page"),
            alice.get("/dashboard/logout"),
            alice.post("/dashboard/memory/forget", data={"repo": "acme/api", "finding_id": "1"}),
            anonymous.get("/dashboard"),
            anonymous.get("/dashboard/overview"),
            anonymous.get("/dashboard/login?operator=1"),
            anonymous.get("/dashboard/jobs/export/jobs.json"),
            anonymous.get("/dashboard/callback?code=x&state=y"),
            anonymous.post("/dashboard/login", data={"token": "x"}),
        ]
        assert {r.status_code for r in responses} >= {200, 303, 401, 403, 404}
        for response in responses:
            _assert_headers(response)
        _assert_headers(alice.get("/dashboard/static/dashboard.css"), store=True)
        _assert_headers(alice.get("/dashboard/static/..%2F..%2Fpyproject.toml"), store=True)
    with _replica(site, tmp_path / "broken") as url:
        db = open_target(str(tmp_path / "broken" / "jobs.db"), "jobs")
        try:  # a damaged store: the page fails, the error response still carries the headers
            db.execute("ALTER TABLE delivery_journal RENAME TO delivery_journal_gone")
        finally:
            db.close()
        failed = httpx.get(url + "/dashboard/jobs", headers=BEARER, timeout=10)
        assert failed.status_code == 500
        _assert_headers(failed)


def test_abusive_query_parameters_are_bounded(site: Dash, operator: httpx.Client) -> None:
    """No parameter reaches a 500: out-of-range numbers, non-ASCII digits, SQL-ish text and NUL bytes are
    refused (400) or give the default or nothing; there is no page size to inflate."""
    cases = [
        ("/dashboard/overview", {"range": "-1d"}),
        ("/dashboard/overview", {"range": "99999d"}),
        ("/dashboard/overview", {"range": "30d' OR 1=1 --"}),
        ("/dashboard/overview", {"repo": "acme/api' OR '1'='1"}),
        ("/dashboard/overview", {"repo": "acme/api\x00"}),
        ("/dashboard/overview", {"installation": "99999999999999999999999"}),
        ("/dashboard/overview", {"installation": "\u00b2"}),
        ("/dashboard/overview", {"installation": "-1"}),
        ("/dashboard/jobs/export/jobs.json", {"installation": "1" * 40}),
        ("/dashboard/jobs/export/jobs.json", {"status": "dead' OR 1=1 --", "limit": "100000000"}),
        ("/dashboard/quiet", {"repo": "acme/api", "pr": "99999999999999999999999"}),
        ("/dashboard/quiet", {"repo": "acme/api", "pr": "-5"}),
        ("/dashboard/quiet", {"repo": "acme/api", "pr": "\u0661"}),
        ("/dashboard/quiet/export/quiet-reviews.csv", {"repo": "acme/api", "pr": "1" * 30}),
        ("/dashboard/memory/export/memory-all.json", {"range": "90d", "repo": "%", "page_size": "1000000"}),
    ]
    for path, params in cases:
        response = operator.get(path, params=params)
        assert response.status_code in (200, 400), (path, params, response.status_code)
        if response.status_code == 200 and path.endswith(".json"):
            assert len(response.json()["rows"]) <= 200
    assert len(operator.get("/dashboard/jobs/export/jobs.json?limit=100000").json()["rows"]) <= 100
    default = operator.get("/dashboard/overview", params={"range": "99999d"}).text
    assert "last 30d" in default
    sqlish = operator.get(
        "/dashboard/overview/export/overview-by-repo.json", params={"repo": "acme/api' OR '1'='1"}
    )
    assert sqlish.status_code == 400 or sqlish.json()["rows"] == []
    forms = [
        {"finding_id": "9" * 30},
        {"finding_id": "-1"},
        {"finding_id": "\u0661"},
        {"finding_id": "1", "repo": "a\x00/b"},
    ]
    for form in forms:
        refused = operator.post("/dashboard/memory/forget", data={"repo": "acme/api", **form})
        assert refused.status_code == 400, form
    assert operator.post("/dashboard/jobs/retry", data={"delivery_id": "x\x00" * 200}).status_code in (
        400,
        403,
    )


def test_without_sign_in_configured_every_dashboard_path_is_404(tmp_path: Path) -> None:
    with FakeGitHub() as fake:
        stores = Stores(
            TelemetryStore(tmp_path / "telemetry.db"),
            KnowledgeStore(tmp_path / "knowledge.db"),
            NoopEmbeddingProvider(),
        )
        runtime = build_runtime(make_config(tmp_path, fake.url), github=make_github(fake), stores=stores)
        with structlog.testing.capture_logs() as logs:
            app = create_app(runtime, dashboard=DashboardOptions(api_url=fake.url))
        server = LiveServer(app).start()
        try:
            with httpx.Client(base_url=server.url, headers=BEARER, timeout=10) as client:
                for path in (
                    "/dashboard",
                    "/dashboard/",
                    "/dashboard/login?operator=1",
                    "/dashboard/callback?code=x&state=y",
                    "/dashboard/static/dashboard.css",
                    "/dashboard/memory/export/memory-all.csv",
                    "/dashboard/jobs/export/jobs.json",
                    "/dashboard/quiet?repo=acme/api&pr=1",
                ):
                    assert client.get(path).status_code == 404, path
                for path in (
                    "/dashboard/login",
                    "/dashboard/logout",
                    "/dashboard/memory/forget",
                    "/dashboard/jobs/retry",
                ):
                    assert client.post(path, data={"csrf": "x"}).status_code == 404, path
        finally:
            server.stop()
    hints = [e for e in logs if "DASHBOARD_TOKEN" in e["event"]]  # the log line says how to enable it
    assert hints and "GITHUB_CLIENT_ID" in hints[0]["event"]


def test_no_secret_reaches_the_logs(site: Dash, capfd: pytest.CaptureFixture[str]) -> None:
    """A GitHub sign-in, a failed and a successful operator sign-in, bearer requests, a refused code: the
    log lines (every field) and the process's output name none of the secrets involved."""
    with structlog.testing.capture_logs() as logs:
        with closing(site.sign_in("alice")) as alice:
            cookie = alice.cookies.get("kodiai_dashboard") or ""
            alice.get("/dashboard/memory?range=90d")
        with httpx.Client(base_url=site.url, timeout=10) as browser:
            form = browser.get("/dashboard/login?operator=1")
            nonce = re.search(r'name="csrf" value="([^"]+)"', form.text)
            assert nonce
            browser.post(
                "/dashboard/login",
                data={"token": "operator-token-for-tests-01234567", "csrf": nonce.group(1)},
            )
            browser.post("/dashboard/login", data={"token": OPERATOR_TOKEN, "csrf": nonce.group(1)})
            browser.get("/dashboard/jobs")
            browser.get("/dashboard/callback", params={"code": "a-stolen-code", "state": "x"})
        httpx.get(site.url + "/dashboard/jobs/export/jobs.json", headers=BEARER, timeout=10)
        httpx.get(
            site.url + "/dashboard/jobs/export/jobs.json",
            headers={"Authorization": "Bearer wrong-guess"},
            timeout=10,
        )
    secrets = [
        OPERATOR_TOKEN,
        "operator-token-for-tests-01234567",
        CLIENT_SECRET,
        SESSION_KEY,
        cookie,
        *site.oauth.tokens,
        "wrong-guess",
    ]
    out, err = capfd.readouterr()
    text = "\n".join(repr(e) for e in logs) + out + err
    assert any("Dashboard sign-in" in str(e.get("event")) for e in logs)  # the flow was logged
    for secret in secrets:
        assert secret and secret not in text, secret[:8]
    assert CLIENT_ID  # the client id is not a secret
