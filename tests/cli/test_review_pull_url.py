"""``kodiai review PR_URL``: a real PR fetched from the fake GitHub over HTTP (PyGithub), cloned over git
smart HTTP with the token in a header, reviewed, and (``--post``) published; the model is the real
Claude Code CLI against a fake Messages API. Nothing of our own is replaced."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from e2e.stack import summary
from kodiai.cli.main import app
from kodiai.cli.review_cmd import PROMPT_RULE, RETRIEVAL_RULE
from kodiai.github.app_auth import GitHubApp
from support.fake_anthropic import FAKE_API_KEY, FakeAnthropic, ScriptedConversation, Text, ToolUse
from support.fake_github import FakeGitHub
from support.fake_github_git import GitRoutes, install_git_routes
from support.fake_github_pr import PrState, install_pr_routes
from support.gitrepo import BareRepo

OWNER, REPO, INSTALLATION, NUMBER = "acme", "widgets", 42, 7
INLINE = "mcp__github_inline_comment__create_inline_comment"
COMMENT = "mcp__github_comment__create_comment"

runner = CliRunner()


@dataclass
class Hub:
    fake: FakeGitHub
    state: PrState
    git: GitRoutes
    token: str
    tmp: Path
    head_sha: str

    @property
    def url(self) -> str:
        return f"{self.fake.url}/{OWNER}/{REPO}/pull/{NUMBER}"

    def workspaces(self) -> list[Path]:
        root = self.tmp / "ws"
        return list(root.iterdir()) if root.exists() else []


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hub]:
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in (
        "GITHUB_TOKEN",
        "GITHUB_APP_ID",
        "GITHUB_PRIVATE_KEY",
        "GITHUB_PRIVATE_KEY_BASE64",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "VOYAGE_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    with FakeGitHub() as fake:
        state = install_pr_routes(fake)
        routes = install_git_routes(fake, tmp_path / "git")
        fake.add_installation(INSTALLATION)
        fake.add_repo(OWNER, REPO, installation_id=INSTALLATION)
        bare = BareRepo(tmp_path / "git", OWNER, REPO)
        base_sha = bare.commit({"app.py": "x = 1\n", "README.md": "hello\n"}, "initial")
        head_sha = bare.add_pull_head(
            NUMBER, {"app.py": "x = 2\n", "lib/util.py": "def double(v):\n    return v * 2\n"}
        )
        state.add_pull(
            OWNER,
            REPO,
            NUMBER,
            head_sha=head_sha,
            base_sha=base_sha,
            title="Double the widget count",
            body="The widget count was off by half.",
            author="alice",
            head_ref="double-widgets",
            files=["app.py", "lib/util.py"],
        )
        token = GitHubApp(fake.app_id, fake.private_key_pem, base_url=fake.url).installation_token(
            INSTALLATION
        )
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        monkeypatch.setenv("WORKSPACE_ROOT", str(tmp_path / "ws"))
        monkeypatch.setenv("LEARNING_MEMORY_URI", str(tmp_path / "absent.lance"))
        yield Hub(fake, state, routes, token, tmp_path, head_sha)


def _no_token_in(hub: Hub, *texts: str) -> None:
    for text in texts:
        assert hub.token not in text


def test_dry_run_prints_the_prompt_of_the_real_pull_request(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", hub.token)
    result = runner.invoke(app, ["review", hub.url, "--dry-run"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"pull request: #{NUMBER} {hub.url}" in out
    assert "range: main...double-widgets" in out and "changed files: 2" in out
    assert RETRIEVAL_RULE in out
    prompt = out[out.index(PROMPT_RULE) + len(PROMPT_RULE) + 1 :]
    assert prompt.startswith(f"You are reviewing pull request #{NUMBER} in {OWNER}/{REPO}.")
    assert "Title: Double the widget count" in prompt
    assert "The widget count was off by half." in prompt
    assert "Author: alice" in prompt
    assert "Branches: double-widgets -> main" in prompt
    assert "app.py" in prompt and "lib/util.py" in prompt
    # cloned over smart HTTP with the token in a header; the clone is gone afterwards
    assert hub.git.requests_for(OWNER, REPO, "git-upload-pack")
    assert all(r.installation_id == INSTALLATION for r in hub.git.requests_for(OWNER, REPO))
    assert hub.workspaces() == []
    _no_token_in(hub, result.stdout, result.stderr)


def test_dry_run_json(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", hub.token)
    result = runner.invoke(app, ["review", hub.url + "/files", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["number"] == NUMBER and data["url"] == hub.url
    assert data["title"] == "Double the widget count"
    assert data["head_sha"] == hub.head_sha
    assert sorted(data["changed_files"]) == ["app.py", "lib/util.py"]


def test_the_github_app_installation_is_used_without_a_token(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_APP_ID", str(hub.fake.app_id))
    monkeypatch.setenv("GITHUB_PRIVATE_KEY", hub.fake.private_key_pem)
    result = runner.invoke(app, ["review", hub.url, "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "Title: Double the widget count" in result.stdout
    assert hub.fake.calls_to("GET", rf"/repos/{OWNER}/{REPO}/installation")


def test_missing_credentials_name_the_variables(hub: Hub) -> None:
    result = runner.invoke(app, ["review", hub.url, "--dry-run"])
    assert result.exit_code == 1
    assert "no GitHub credentials" in result.stderr
    assert "GITHUB_TOKEN" in result.stderr and "GITHUB_APP_ID" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://example.com/acme", "not a pull request URL"),
        ("{base}/acme/widgets/issues/7", "not a pull request URL"),
        ("https://github.com/acme/widgets/pull/7", "set GITHUB_API_URL=https://api.github.com"),
    ],
)
def test_bad_urls_are_refused_before_any_request(
    hub: Hub, monkeypatch: pytest.MonkeyPatch, url: str, expected: str
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", hub.token)
    hub.fake.reset_calls()
    result = runner.invoke(app, ["review", url.format(base=hub.fake.url), "--dry-run"])
    assert result.exit_code == 1
    assert expected in result.stderr
    assert hub.fake.calls_to("GET", r"/repos/") == []


def test_unknown_pull_request_is_a_clear_404(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", hub.token)
    result = runner.invoke(app, ["review", hub.url.replace(f"/pull/{NUMBER}", "/pull/99"), "--dry-run"])
    assert result.exit_code == 1
    assert f"pull request {OWNER}/{REPO}#99 not found" in result.stderr
    assert hub.workspaces() == []


def test_rejected_token_says_so(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_not_a_real_token")
    result = runner.invoke(app, ["review", hub.url, "--dry-run"])
    assert result.exit_code == 1
    assert "GitHub rejected the credentials from GITHUB_TOKEN (HTTP 401)" in result.stderr
    assert "ghs_not_a_real_token" not in result.output


def test_clone_failure_is_reported_and_leaves_no_workspace(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", hub.token)
    hub.fake.fail(500, path=r"\.git/", times=5)
    result = runner.invoke(app, ["review", hub.url, "--dry-run"])
    assert result.exit_code == 1
    assert f"cloning {OWNER}/{REPO} (pull/{NUMBER}/head) failed" in result.stderr
    assert result.stdout == ""
    assert hub.workspaces() == []
    _no_token_in(hub, result.stderr)


def test_url_mode_refuses_local_options(hub: Hub) -> None:
    result = runner.invoke(app, ["review", hub.url, "--base", "main", "--dry-run"])
    assert result.exit_code == 2
    assert "drop --base/--head/--path/--repo" in result.stderr


@pytest.mark.slow
def test_post_publishes_one_review_and_the_summary(
    hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real bundled Claude Code CLI against a fake Messages API: its inline comment and summary are
    recorded during the run, then posted on the fake PR: one COMMENT review carrying the inline comment,
    and the summary as an issue comment."""
    monkeypatch.setenv("GITHUB_TOKEN", hub.token)
    title = "Unchecked doubling"
    script = ScriptedConversation(
        [
            ToolUse(INLINE, {"path": "lib/util.py", "line": 2, "body": f"[MAJOR] {title}\n\nCheck v."}),
            ToolUse(COMMENT, {"issueNumber": NUMBER, "body": summary("lib/util.py", 2, title)}),
            Text("Review posted."),
        ]
    )
    with FakeAnthropic(script=script) as model:
        for name, value in model.env(home=str(tmp_path / "home"), CLAUDE_CODE_MAX_RETRIES="0").items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_API_KEY)
        result = runner.invoke(app, ["review", hub.url, "--post"])
    assert result.exit_code == 0, result.output
    assert "conclusion: success" in result.stderr
    assert "--- inline lib/util.py:2" in result.stdout
    assert f"posted a review with 1 inline comment(s) and 1 comment(s) on {hub.url}" in result.stderr
    assert "Title: Double the widget count" in model.main_requests[0].user_text

    reviews = hub.state.reviews(OWNER, REPO, NUMBER)
    assert [r["state"] for r in reviews] == ["COMMENTED"]
    comments = hub.state.review_comments(OWNER, REPO, NUMBER)
    assert len(comments) == 1
    assert comments[0]["path"] == "lib/util.py" and comments[0]["line"] == 2
    assert comments[0]["pull_request_review_id"] == reviews[0]["id"]
    assert comments[0]["body"].startswith(f"[MAJOR] {title}")
    summaries = hub.state.issue_comments(OWNER, REPO, NUMBER)
    assert len(summaries) == 1 and "Kodiai Review Summary" in summaries[0]["body"]
    assert hub.workspaces() == []
    _no_token_in(hub, result.stdout, result.stderr)


@pytest.mark.slow
def test_without_post_nothing_reaches_the_pull_request(
    hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", hub.token)
    script = ScriptedConversation(
        [ToolUse(INLINE, {"path": "app.py", "line": 1, "body": "[MINOR] x doubled"}), Text("Done.")]
    )
    with FakeAnthropic(script=script) as model:
        for name, value in model.env(home=str(tmp_path / "home"), CLAUDE_CODE_MAX_RETRIES="0").items():
            monkeypatch.setenv(name, value)
        result = runner.invoke(app, ["review", hub.url])
    assert result.exit_code == 0, result.output
    assert "--- inline app.py:1\n[MINOR] x doubled" in result.stdout
    assert hub.state.review_comments(OWNER, REPO, NUMBER) == []
    assert hub.state.reviews(OWNER, REPO, NUMBER) == []
    assert hub.state.issue_comments(OWNER, REPO, NUMBER) == []


def test_as_a_process_stdout_holds_only_the_json(hub: Hub) -> None:
    """The installed command in a fresh process, configured by environment only: stdout is the JSON
    document alone (log lines, even at info, go to stderr) and the token appears nowhere."""
    import os
    import subprocess
    import sys

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "ANTHROPIC_", "CLAUDE_"))},
        "GITHUB_TOKEN": hub.token,
        "GITHUB_API_URL": hub.fake.url,
        "LOG_LEVEL": "info",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "kodiai.cli.main", "review", hub.url, "--dry-run", "--json"],
        env=env,
        cwd=hub.tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["title"] == "Double the widget count"
    assert "Workspace created" in proc.stderr
    _no_token_in(hub, proc.stdout, proc.stderr)
    assert hub.workspaces() == []
