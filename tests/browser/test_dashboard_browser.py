"""The dashboard in a real browser: headless Chromium against a ``kodiai serve`` process over seeded stores
(:mod:`support.seed_dashboard`), signing in through the fake GitHub's OAuth pages as a user would; last, a
real review through the webhook (the real Claude Code CLI against the fake model, git over HTTP) that the
operator then finds on the pages. One server and one Chromium for all: each start costs seconds of CPU.

alice may push to acme/api (and only read acme/web); bob may only read acme/api. The figures checked are
the seed's (see :mod:`support.seed_dashboard`), the same as tests/dashboard checks over plain HTTP: here
the point is what a browser does with the pages — follows the sign-in redirects, keeps the cookies,
applies the CSP, submits the forms, lays the pages out at 1280 and 390 px.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e.stack import INSTALLATION as E2E_INSTALLATION
from e2e.stack import OWNER, REPO, pull_payload, summary
from kodiai.dashboard.routes import CSP
from support.browser import NARROW, WIDE, Browser
from support.fake_anthropic import FakeAnthropic, ScriptedConversation, Text, ToolUse
from support.fake_github import FakeGitHub
from support.fake_github_git import install_git_routes
from support.fake_github_oauth import CLIENT_ID, CLIENT_SECRET, FakeOAuth
from support.fake_github_pr import PrState, install_pr_routes
from support.gitrepo import BareRepo
from support.kodiai_process import KodiaiProcess
from support.seed_dashboard import INSTALLATION, seed_dashboard, seed_jobs

RANGE = "range=90d"
PAGES = {  # page → its path with the query that shows the seeded data
    "overview": f"/dashboard/overview?{RANGE}",
    "retrieval": f"/dashboard/retrieval?{RANGE}",
    "memory": f"/dashboard/memory?{RANGE}",
    "quiet": "/dashboard/quiet?repo=acme/api&pr=1",
    "jobs": "/dashboard/jobs",
}


TOKEN = "browser-e2e-operator-token-0123456789abcdef"


@dataclass
class Site:
    url: str
    oauth: FakeOAuth
    tmp: Path
    server: KodiaiProcess
    fake: FakeGitHub
    state: PrState
    model: FakeAnthropic

    def rows(self, db: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(f"file:{self.tmp / db}?mode=ro", uri=True)
        try:
            return list(conn.execute(sql, params))
        finally:
            conn.close()

    def sign_in(self, browser: Browser, login: str) -> None:
        """Sign in as a user does: /dashboard → GitHub's authorize page (approves at once) → callback."""
        browser.driver.delete_all_cookies()
        self.oauth.next_login = login
        browser.open(self.url + "/dashboard")
        assert browser.driver.current_url == self.url + "/dashboard/overview", browser.text
        assert login in browser.driver.find_element("css selector", "form.who span").text


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The server over the seeded stores, with GitHub sign-in (alice, bob), the operator token, and the fake
    model and git for the review of the last test (installation 42, acme/widgets: none of the users')."""
    tmp = tmp_path_factory.mktemp("browser")
    seed_dashboard(str(tmp / "telemetry.db"), str(tmp / "knowledge.db"), None)
    with FakeGitHub() as fake, FakeAnthropic() as model:
        fake.add_installation(INSTALLATION)
        oauth = FakeOAuth(fake, callback="")
        oauth.add_user("alice", {INSTALLATION: {"acme/api": True, "acme/web": False}})
        oauth.add_user("bob", {INSTALLATION: {"acme/api": False}})
        state = install_pr_routes(fake)
        install_git_routes(fake, tmp / "git")
        server = KodiaiProcess(
            tmp,
            fake,
            model,
            GITHUB_CLIENT_ID=CLIENT_ID,
            GITHUB_CLIENT_SECRET=CLIENT_SECRET,
            DASHBOARD_SESSION_SECRET="browser-tests-session-key",
            DASHBOARD_TOKEN=TOKEN,
            EMBEDDING_PROVIDER="none",  # no memory asserted
        ).start()
        try:
            seed_jobs(str(tmp / "jobs.db"))  # after start-up: its recovery must not replay them
            oauth.callback = server.url + "/dashboard/callback"
            yield Site(server.url, oauth, tmp, server, fake, state, model)
        finally:
            server.stop()


def test_sign_in_and_every_page_renders_its_figures_at_both_widths(site: Site, browser: Browser) -> None:
    site.sign_in(browser, "alice")
    retrievals = site.rows(
        "telemetry.db",
        "SELECT COUNT(*) FROM retrieval_quality WHERE repo = 'acme/api' AND created_at >= datetime('now', '-90 days')",
    )[0][0]
    expected = {
        "overview": lambda: browser.by_id("fig-reviews") == "2",  # acme/api's 2 reviews, not acme/web's
        "retrieval": lambda: browser.by_id("fig-retrievals") == str(retrievals),
        "memory": lambda: "33.3 % (6)" in browser.text and "acme/web" not in browser.text,
        "quiet": lambda: "rv1" in browser.text and "503" in browser.text,
        "jobs": lambda: "job-dead-1" in browser.text and "job-dead-other" not in browser.text,
    }
    assert browser.severe_console() == []  # the sign-in redirects and the first page (its favicon too)
    shots = []
    for width in (WIDE, NARROW):
        browser.viewport(width)
        for name, path in PAGES.items():
            browser.open(site.url + path)
            assert browser.driver.title == f"Kodiai · {name}"
            assert expected[name](), f"{name} at {width} px:\n{browser.text[:2000]}"
            # the stylesheet applied (a CSP that blocked it would leave the browser's default margin)
            assert browser.driver.execute_script("return getComputedStyle(document.body).margin") == "0px"
            scroll, inner = browser.overflow()
            # on a phone, content wider than the screen makes Chrome zoom out (innerWidth grows): check both
            assert scroll <= inner == width, f"{name} overflows at {width} px: {scroll}, {inner}"
            shots.append(browser.screenshot(name, width))
            assert browser.severe_console() == [], f"console errors on {name} at {width} px"
    browser.viewport(WIDE)
    assert all(p.stat().st_size > 1000 for p in shots)


def test_csp_header_is_sent_and_enforced_by_the_browser(site: Site, browser: Browser) -> None:
    site.sign_in(browser, "alice")
    cookies = {"kodiai_dashboard": browser.cookie("kodiai_dashboard") or ""}
    for path in PAGES.values():
        response = httpx.get(site.url + path, cookies=cookies, timeout=10)
        policy = response.headers["content-security-policy"]
        assert response.status_code == 200 and policy == CSP
        assert "default-src 'none'" in policy and "style-src 'self';" in policy and "unsafe" not in policy
    browser.open(site.url + PAGES["overview"])
    browser.severe_console()
    # An injected inline style (as an XSS would add) is refused by the page's policy and reported.
    applied = browser.driver.execute_script(
        "const s = document.createElement('style');"
        "s.textContent = 'body { background-color: rgb(1, 2, 3) !important; }';"
        "document.head.appendChild(s);"
        "return getComputedStyle(document.body).backgroundColor;"
    )
    assert applied != "rgb(1, 2, 3)"
    refused = browser.severe_console()
    assert any("Content Security Policy" in e["message"] for e in refused), refused


def _forget_form(browser: Browser, finding_id: int) -> Any:
    return browser.driver.find_element(
        "xpath",
        f"//form[@action='/dashboard/memory/forget'][input[@name='finding_id'][@value='{finding_id}']]",
    )


def test_forget_from_the_page_is_recorded_and_shown_for_a_writer(site: Site, browser: Browser) -> None:
    site.sign_in(browser, "alice")
    browser.open(site.url + PAGES["memory"])
    _forget_form(browser, 500).find_element("tag name", "button").click()
    assert browser.driver.current_url.startswith(site.url + "/dashboard/memory?message=")
    assert browser.driver.find_element("css selector", "p.message").text  # the action's outcome
    browser.open(site.url + PAGES["memory"])
    row = browser.driver.find_element("xpath", "//tr[td[2][normalize-space()='500']][td[last()]]")
    assert row.find_elements("xpath", "td")[-1].text == "forgotten"
    assert site.rows(
        "knowledge.db", "SELECT repo, action, actor FROM memory_governance WHERE finding_id = 500"
    ) == [("acme/api", "forget", "alice")]
    assert browser.severe_console() == []


def test_forget_is_refused_for_a_read_only_user(site: Site, browser: Browser) -> None:
    site.sign_in(browser, "bob")
    browser.open(site.url + PAGES["memory"])
    assert browser.driver.find_elements("css selector", "form[action='/dashboard/memory/forget']") == []
    # bob's own session and CSRF token, on a form he builds himself: the server still refuses it
    browser.driver.execute_script(
        "const f = document.createElement('form'); f.method = 'post'; f.action = '/dashboard/memory/forget';"
        "for (const [k, v] of [['csrf', arguments[0]], ['repo', 'acme/api'], ['finding_id', '504']]) {"
        "  const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); }"
        "document.body.appendChild(f); f.submit();",
        browser.driver.find_element("css selector", "form.who input[name=csrf]").get_attribute("value"),
    )
    assert "Forbidden: you have no write access" in browser.text
    assert site.rows("knowledge.db", "SELECT * FROM memory_governance WHERE finding_id = 504") == []


def test_a_post_without_its_csrf_token_is_refused(site: Site, browser: Browser) -> None:
    site.sign_in(browser, "alice")
    browser.open(site.url + PAGES["memory"])
    form = _forget_form(browser, 501)
    browser.driver.execute_script("arguments[0].querySelector('input[name=csrf]').remove()", form)
    form.find_element("tag name", "button").click()
    assert "Forbidden: missing or wrong CSRF token" in browser.text
    assert site.rows("knowledge.db", "SELECT * FROM memory_governance WHERE finding_id = 501") == []


# ---------------------------------------------------------------------------------------------- after a review
DELIVERY = "browser-e2e-review-1"
TITLE = "Division by zero when b is 0"


def test_the_dashboard_shows_a_review_delivered_through_the_webhook(site: Site, browser: Browser) -> None:
    """A signed ``pull_request`` webhook to the server, then the operator signs in through the token form
    and finds that review on the overview, the why-quiet and jobs pages."""
    fake, state, server = site.fake, site.state, site.server
    fake.add_installation(E2E_INSTALLATION, account=OWNER)
    fake.add_repo(OWNER, REPO, installation_id=E2E_INSTALLATION)
    state.set_permission(OWNER, REPO, "alice", "write")
    repo = BareRepo(site.tmp / "git", OWNER, REPO)
    base = repo.commit({"src/app.py": "def add(a, b):\n    return a + b\n"}, "base")
    head = repo.commit({"src/app.py": "def div(a, b):\n    return a / b\n"}, "div", branch="pr-1")
    state.add_pull(OWNER, REPO, 1, head_sha=head)
    site.model.script = ScriptedConversation(
        [
            ToolUse(
                "mcp__github_inline_comment__create_inline_comment",
                {"path": "src/app.py", "line": 2, "body": f"[MAJOR] {TITLE}\n\nGuard the input."},
            ),
            ToolUse(
                "mcp__github_comment__create_comment",
                {"issueNumber": 1, "body": summary("src/app.py", 2, TITLE)},
            ),
        ],
        final=Text("Review posted."),
    )
    payload = pull_payload(repo, 1, head_sha=head, base_sha=base, branch="pr-1", title="Add div")
    assert server.deliver(payload, delivery=DELIVERY).status_code == 200
    server.wait_for_log("Review job finished", prNumber=1, timeout=120)
    assert len(state.review_comments(OWNER, REPO, 1)) == 1

    browser.driver.delete_all_cookies()
    browser.severe_console()  # drained: the refusals the tests above provoked are in the log
    browser.viewport(WIDE)
    browser.open(server.url + "/dashboard/login?operator=1")
    browser.driver.find_element("name", "token").send_keys(TOKEN)
    browser.driver.find_element("css selector", "form[action='/dashboard/login'] button").click()
    assert browser.driver.current_url == server.url + "/dashboard/overview", browser.text

    query = f"repo={OWNER}/{REPO}&range=1d"
    browser.open(f"{server.url}/dashboard/overview?{query}")
    assert browser.by_id("fig-reviews") == "1" and browser.by_id("fig-runs") == "1", browser.text
    severity = browser.driver.find_element("xpath", "//table[.//th[.='severity']]").text
    assert "major 1" in severity, severity
    browser.screenshot("e2e-overview", WIDE)

    browser.open(f"{server.url}/dashboard/quiet?repo={OWNER}/{REPO}&pr=1")
    assert DELIVERY in browser.text and "No data" not in browser.text, browser.text
    browser.screenshot("e2e-quiet", WIDE)

    browser.open(server.url + "/dashboard/jobs")
    row = browser.driver.find_element("xpath", f"//tr[td[normalize-space()='{DELIVERY}']]").text
    assert "done" in row, row
    browser.screenshot("e2e-jobs", WIDE)
    assert browser.severe_console() == []
