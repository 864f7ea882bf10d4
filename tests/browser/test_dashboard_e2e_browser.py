"""The dashboard after a real review: a signed ``pull_request`` webhook to ``kodiai serve`` (the real Claude
Code CLI against the fake model, the fake GitHub with git over HTTP), then the operator signs in through
the token form in headless Chromium and finds that review on the overview, the why-quiet and jobs pages.
One test: it is the slow one."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.stack import INSTALLATION, OWNER, REPO, pull_payload
from support.browser import WIDE, Browser
from support.fake_anthropic import FakeAnthropic, ScriptedConversation, Text, ToolUse
from support.fake_github import FakeGitHub
from support.fake_github_git import install_git_routes
from support.fake_github_pr import install_pr_routes
from support.gitrepo import BareRepo
from support.kodiai_process import KodiaiProcess

pytestmark = pytest.mark.slow

TOKEN = "browser-e2e-operator-token-0123456789abcdef"
DELIVERY = "browser-e2e-review-1"
TITLE = "Division by zero when b is 0"
SUMMARY = "\n".join(
    [
        "<details>",
        "<summary>Kodiai Review Summary</summary>",
        "",
        "## What Changed",
        "Adds a helper.",
        "",
        "## Observations",
        "",
        "### Impact",
        f"[MAJOR] src/app.py (2): {TITLE}",
        "The input is not checked.",
        "",
        "## Verdict",
        ":red_circle: **Address before merging** -- 1 blocking issue(s) found",
        "</details>",
    ]
)


def test_the_dashboard_shows_a_review_delivered_through_the_webhook(tmp_path: Path, browser: Browser) -> None:
    with FakeGitHub() as fake, FakeAnthropic() as model:
        state = install_pr_routes(fake)
        install_git_routes(fake, tmp_path / "git")
        fake.add_installation(INSTALLATION, account=OWNER)
        fake.add_repo(OWNER, REPO, installation_id=INSTALLATION)
        state.set_permission(OWNER, REPO, "alice", "write")
        repo = BareRepo(tmp_path / "git", OWNER, REPO)
        base = repo.commit({"src/app.py": "def add(a, b):\n    return a + b\n"}, "base")
        head = repo.commit({"src/app.py": "def div(a, b):\n    return a / b\n"}, "div", branch="pr-1")
        state.add_pull(OWNER, REPO, 1, head_sha=head)
        model.script = ScriptedConversation(
            [
                ToolUse(
                    "mcp__github_inline_comment__create_inline_comment",
                    {"path": "src/app.py", "line": 2, "body": f"[MAJOR] {TITLE}\n\nGuard the input."},
                ),
                ToolUse("mcp__github_comment__create_comment", {"issueNumber": 1, "body": SUMMARY}),
            ],
            final=Text("Review posted."),
        )
        server = KodiaiProcess(
            tmp_path,
            fake,
            model,
            DASHBOARD_TOKEN=TOKEN,
            EMBEDDING_PROVIDER="none",  # no memory asserted
        ).start()
        try:
            payload = pull_payload(repo, 1, head_sha=head, base_sha=base, branch="pr-1", title="Add div")
            assert server.deliver(payload, delivery=DELIVERY).status_code == 200
            server.wait_for_log("Review job finished", prNumber=1, timeout=120)
            assert len(state.review_comments(OWNER, REPO, 1)) == 1

            browser.driver.delete_all_cookies()
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
        finally:
            server.stop()
