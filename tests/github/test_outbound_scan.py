"""Every GitHub write leaves through ``GitHubRest``, whose body passes the secret scanner: the real
client, the real App token cache and the composition's wiring against the fake GitHub over HTTP."""

from __future__ import annotations

import ast
import base64
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from structlog.testing import capture_logs

from kodiai.github.app_auth import GitHubApp
from kodiai.github.pulls import PullRequestApi
from kodiai.github.rest import GitHubRest
from kodiai.metrics import Metrics
from kodiai.server.composition import guard_outbound_secrets
from kodiai.settings import Settings
from kodiai.text.secret_scan import REDACTION_MARKER
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState, install_pr_routes

OWNER, REPO, PR, INSTALLATION = "acme", "widgets", 7, 1
#: No regex knows this shape: only the exact match of the configured value can find it.
WEBHOOK_SECRET = "hook secret " + secrets.token_hex(8)


@pytest.fixture(scope="module")
def fake_pr() -> Iterator[tuple[FakeGitHub, PrState]]:
    with FakeGitHub() as fake:
        state = install_pr_routes(fake)
        fake.add_installation(INSTALLATION, account=OWNER)
        fake.add_repo(OWNER, REPO, installation_id=INSTALLATION)
        yield fake, state


@pytest.fixture
def server(fake_pr: tuple[FakeGitHub, PrState]) -> Iterator[SimpleNamespace]:
    """What ``kodiai serve`` wires at start: the settings' secrets known, hits counted in its metrics."""
    fake, state = fake_pr
    with fake.lock:
        for kind in ("issue_comments", "review_comments", "reviews", "pulls"):
            fake.data[kind].clear()
    state.add_pull(OWNER, REPO, PR, head_sha="abc123", files=["src/app.py"])
    fake.reset_calls()
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        github_app_id=str(fake.app_id),
        github_private_key=fake.private_key_pem,
        github_webhook_secret=WEBHOOK_SECRET,
    )
    runtime = SimpleNamespace(metrics=Metrics(), closers=[])
    guard_outbound_secrets(runtime, settings)  # type: ignore[arg-type]
    app = GitHubApp(fake.app_id, fake.private_key_pem, base_url=fake.url)
    token = app.installation_token(INSTALLATION)  # minted here: registered as a known secret
    rest = GitHubRest(app.installation_client(INSTALLATION), OWNER, REPO)
    yield SimpleNamespace(
        fake=fake, state=state, runtime=runtime, token=token, rest=rest, pem=fake.private_key_pem
    )
    for close in runtime.closers:
        close()


def secret_values(server: SimpleNamespace) -> list[str]:
    basic = base64.b64encode(f"x-access-token:{server.token}".encode()).decode()
    key_lines = [line for line in server.pem.splitlines() if len(line) > 20]
    return [server.token, basic, WEBHOOK_SECRET, *key_lines]


def leaky_body(server: SimpleNamespace) -> str:
    basic = base64.b64encode(f"x-access-token:{server.token}".encode()).decode()
    return (
        f"Found these in the environment:\n- token `{server.token}`\n- git header `{basic}`\n"
        f"- webhook secret: {WEBHOOK_SECRET}\n\n```\n{server.pem}```\nEnd of report."
    )


def metric(server: SimpleNamespace, surface: str, action: str = "redacted") -> float:
    value = server.runtime.metrics.registry.get_sample_value(
        "kodiai_outbound_secret_hits_total", {"surface": surface, "action": action}
    )
    return value or 0.0


def sent_json(server: SimpleNamespace, method: str, path: str) -> str:
    [call] = server.fake.calls_to(method, path)
    return json.dumps(call.json)


async def test_a_comment_with_a_token_a_key_and_the_webhook_secret_is_posted_redacted(
    server: SimpleNamespace,
) -> None:
    with capture_logs() as logs:
        created = await server.rest.post(f"/issues/{PR}/comments", {"body": leaky_body(server)})
    posted = server.state.issue_comments(OWNER, REPO, PR)[-1]["body"]
    assert created["body"] == posted
    wire = sent_json(server, "POST", rf"/repos/{OWNER}/{REPO}/issues/{PR}/comments")
    for value in secret_values(server):
        assert value not in posted and value not in wire
    assert posted.startswith("Found these in the environment:\n- token `[secret redacted]`")
    assert posted.count(REDACTION_MARKER) == 4 and posted.endswith("End of report.")
    [event] = [e for e in logs if e["event"] == "Secret found in outbound content"]
    assert event["log_level"] == "warning" and event["surface"] == "issue_comment"
    assert set(event["detectors"]) == {"github-token", "private-key", "server-secret"}
    logged = repr(logs)
    assert all(value not in logged for value in secret_values(server))
    assert metric(server, "issue_comment") == 1.0
    rendered = server.runtime.metrics.render()[0].decode()
    assert 'kodiai_outbound_secret_hits_total{action="redacted",surface="issue_comment"} 1.0' in rendered


async def test_review_bodies_inline_comments_replies_edits_and_bot_prs_are_redacted(
    server: SimpleNamespace,
) -> None:
    leak = leaky_body(server)
    rest = server.rest
    await rest.post(
        f"/pulls/{PR}/reviews",
        {"event": "COMMENT", "body": leak, "comments": [{"path": "src/app.py", "line": 1, "body": leak}]},
    )
    parent = await rest.post(
        f"/pulls/{PR}/comments", {"body": leak, "path": "src/app.py", "line": 2, "commit_id": "abc123"}
    )
    await rest.post(f"/pulls/{PR}/comments/{parent['id']}/replies", {"body": leak})
    comment = await rest.post(f"/issues/{PR}/comments", {"body": "fine"})
    await rest.patch(f"/issues/comments/{comment['id']}", {"body": leak})
    await rest.post(
        "/pulls", {"title": f"kodiai {server.token}", "head": "kodiai/x", "base": "main", "body": leak}
    )
    await PullRequestApi(rest, PR).create_issue_comment(leak)  # the handlers' own wrapper
    stored = [
        *(c["body"] for c in server.state.review_comments(OWNER, REPO, PR)),
        *(r["body"] for r in server.state.reviews(OWNER, REPO, PR)),
        *(c["body"] for c in server.state.issue_comments(OWNER, REPO, PR)),
        *(f"{p['title']} {p['body']}" for p in server.state.created_pulls(OWNER, REPO)),
    ]
    assert len(stored) == 7
    for value in secret_values(server):
        assert not [body for body in stored if value in body]
    assert all(REDACTION_MARKER in body for body in stored if body != "fine")
    assert [
        metric(server, s) for s in ("review", "review_comment", "review_comment_reply", "pull_request")
    ] == [
        1.0,
        1.0,
        1.0,
        1.0,
    ]
    assert metric(server, "issue_comment") == 2.0  # the edit and the wrapper's comment


async def test_a_clean_body_goes_out_unchanged_and_counts_nothing(server: SimpleNamespace) -> None:
    body = (
        "Looks good. `sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08`, "
        "node MDExOlB1bGxSZXF1ZXN0Mjc5MTQ3NDM3, token = os.environ['GITHUB_TOKEN']"
    )
    with capture_logs() as logs:
        await server.rest.post(f"/issues/{PR}/comments", {"body": body})
    assert server.state.issue_comments(OWNER, REPO, PR)[-1]["body"] == body
    assert not [e for e in logs if e["event"] == "Secret found in outbound content"]
    assert server.runtime.metrics.registry.get_sample_value(
        "kodiai_outbound_secret_hits_total", {"surface": "issue_comment", "action": "redacted"}
    ) in (None, 0.0)


async def test_after_the_runtime_closes_its_settings_are_no_longer_matched(
    fake_pr: tuple[FakeGitHub, PrState],
) -> None:
    fake, state = fake_pr
    state.add_pull(OWNER, REPO, PR, head_sha="abc123", files=["src/app.py"])
    secret = "closing secret " + secrets.token_hex(8)
    runtime = SimpleNamespace(metrics=Metrics(), closers=[])
    settings = Settings(_env_file=None, github_webhook_secret=secret)  # type: ignore[call-arg]
    guard_outbound_secrets(runtime, settings)  # type: ignore[arg-type]
    for close in runtime.closers:
        close()
    app = GitHubApp(fake.app_id, fake.private_key_pem, base_url=fake.url)
    rest = GitHubRest(app.installation_client(INSTALLATION), OWNER, REPO)
    await rest.post(f"/issues/{PR}/comments", {"body": f"s={secret}"})
    assert state.issue_comments(OWNER, REPO, PR)[-1]["body"] == f"s={secret}"
    assert runtime.metrics.registry.get_sample_value(
        "kodiai_outbound_secret_hits_total", {"surface": "issue_comment", "action": "redacted"}
    ) in (None, 0.0)


# ---- no write bypasses GitHubRest -------------------------------------------------------------------

SRC = Path(__file__).resolve().parents[2] / "src" / "kodiai"
#: PyGithub's entry points to objects whose methods write (``repo.get_issue(n).create_comment(...)``).
_PYGITHUB_OBJECTS = {"get_repo", "get_issue", "get_pull", "get_user", "get_organization"}
_RAW_REQUESTS = {"requestJsonAndCheck", "requestJson", "requestMultipartAndCheck", "requestBlobAndCheck"}


def _bypasses(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name = node.func.attr
        if name in _PYGITHUB_OBJECTS:
            found.append(f"{path.name}:{node.lineno} {name}")
        if name in _RAW_REQUESTS:
            method = node.args[0] if node.args else None
            if not (isinstance(method, ast.Constant) and method.value == "GET"):
                found.append(f"{path.name}:{node.lineno} {name}")
    return found


def test_no_github_write_bypasses_the_scanner() -> None:
    """Only ``GitHubRest.call`` sends non-GET requests (PyGithub object writes would skip the scan)."""
    rest = SRC / "github" / "rest.py"
    offenders = [hit for path in sorted(SRC.rglob("*.py")) if path != rest for hit in _bypasses(path)]
    assert offenders == []
    assert _bypasses(rest) == [
        "rest.py:" + str(_line_of(rest, "requestJsonAndCheck(")) + " requestJsonAndCheck"
    ]


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)
