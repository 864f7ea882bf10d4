"""``kodiai review`` end to end through the typer app, on a real temporary git repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.cli.review_cmd import PROMPT_RULE, RETRIEVAL_RULE
from support.gitrepo import commit_files, git

runner = CliRunner()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no stray .env is read
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "VOYAGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LEARNING_MEMORY_URI", str(tmp_path / "absent.lance"))
    root = tmp_path / "widgets"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    git("remote", "add", "origin", "https://github.com/acme/widgets.git", cwd=root)
    commit_files(root, {"app.py": "x = 1\n", ".kodiai.yml": "review:\n  maxComments: 5\n"}, "initial")
    git("checkout", "-q", "-b", "topic", cwd=root)
    commit_files(root, {"app.py": "x = 2\n", "lib/util.go": "package lib\n"}, "fix: bump x")
    return root


def test_dry_run_prints_prompt_and_retrieval_context(repo: Path) -> None:
    """--dry-run prints the retrieval context and the exact prompt; the model is not called."""
    result = runner.invoke(
        app, ["review", "--path", str(repo), "--base", "main", "--head", "topic", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "repository: acme/widgets" in out and "changed files: 2" in out
    retrieval = out[out.index(RETRIEVAL_RULE) : out.index(PROMPT_RULE)]
    assert "status: no-store" in retrieval and "absent.lance" in retrieval
    prompt = out[out.index(PROMPT_RULE) + len(PROMPT_RULE) + 1 :]
    assert prompt.startswith("You are reviewing pull request #0 in acme/widgets.")
    assert "Title: fix: bump x" in prompt and "Branches: topic -> main" in prompt
    assert "Post at most 5 inline comments" in prompt
    assert "app.py" in prompt and "lib/util.go" in prompt


def test_dry_run_json(repo: Path) -> None:
    """--dry-run --json prints the whole context as JSON (prompt included, verbatim)."""
    result = runner.invoke(
        app, ["review", "--path", str(repo), "--base", "main", "--head", "topic", "--dry-run", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["changed_files"] == ["app.py", "lib/util.go"]
    assert data["retrieval"]["status"] == "no-store"
    assert data["prompt"].startswith("You are reviewing pull request #0 in acme/widgets.")


def test_unknown_ref_is_a_clear_error(repo: Path) -> None:
    """A ref that does not exist exits 1 naming which ref (base or head) was wrong; nothing on stdout."""
    result = runner.invoke(app, ["review", "--path", str(repo), "--base", "nope", "--dry-run"])
    assert result.exit_code == 1
    assert "kodiai review: base ref 'nope' is not a commit" in result.output
    assert "--base" in result.output
    result = runner.invoke(
        app, ["review", "--path", str(repo), "--base", "main", "--head", "nope2", "--dry-run"]
    )
    assert result.exit_code == 1
    assert "kodiai review: head ref 'nope2' is not a commit" in result.output
    assert PROMPT_RULE not in result.stdout


def test_run_without_credentials_refuses(repo: Path) -> None:
    """Without --dry-run and without model credentials the command explains what is missing (exit 2)."""
    result = runner.invoke(app, ["review", "--path", str(repo), "--base", "main", "--head", "topic"])
    assert result.exit_code == 2
    assert "CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_API_KEY" in result.output


def test_run_with_claude_cli_prints_what_would_be_posted(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --dry-run: the real SDK starts the Claude Code executable (a scripted stand-in via
    --cli-path) in the repository; its MCP tool call reaches our inline-comment tool, which records
    the comment (marker and mention sanitising applied) instead of posting it; the command prints it.
    The stand-in is a Python script of this checkout, so it runs with ``AGENT_SANDBOX=off`` (the
    sandbox is tested with the real CLI in tests/execution/test_sandbox_cli.py)."""
    import shlex
    import stat
    import sys

    monkeypatch.setenv("AGENT_SANDBOX", "off")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-for-local-run")
    arguments = {"path": "app.py", "line": 1, "body": "[MINOR] x changed without a test @kodiai"}
    fake_env = {
        "FAKE_CLI_RECORD": str(tmp_path / "record.json"),
        "FAKE_CLI_MODE": "tool",
        "FAKE_CLI_TOOL": json.dumps(["github_inline_comment", "create_inline_comment", arguments]),
    }
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in fake_env.items())  # not allow-listed
    fake = Path(__file__).parents[1] / "execution" / "fake_claude_cli.py"
    cli = tmp_path / "claude"
    cli.write_text(f'#!/bin/sh\n{exports}exec "{sys.executable}" "{fake}" "$@"\n', encoding="utf-8")
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)

    result = runner.invoke(
        app, ["review", "--path", str(repo), "--base", "main", "--head", "topic", "--cli-path", str(cli)]
    )

    assert result.exit_code == 0, result.output
    assert "conclusion: success  published: True" in result.output
    out = result.stdout
    assert (
        "--- inline app.py:1\n[MINOR] x changed without a test kodiai\n\n<!-- kodiai:review-output-key:"
        in out
    )
    assert ":head-" + git("rev-parse", "topic", cwd=repo) + " -->" in out
    seen = json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))
    assert Path(seen["cwd"]).resolve() == repo.resolve()
    assert seen["env"]["ANTHROPIC_API_KEY"] == "sk-ant-test-key-for-local-run"


@pytest.mark.slow
def test_dry_run_retrieves_from_local_store_with_local_embeddings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--dry-run --embeddings local against a real LanceDB store written with the real local model:
    this repository's memory is retrieved, shown in the retrieval context and put into the prompt."""
    from kodiai.learning.embeddings import LocalEmbeddingProvider
    from kodiai.learning.setup import open_store_for_provider
    from kodiai.learning.types import LearningMemoryRecord

    monkeypatch.chdir(tmp_path)
    root = tmp_path / "widgets"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    git("remote", "add", "origin", "https://github.com/acme/widgets.git", cwd=root)
    config = "knowledge:\n  retrieval:\n    adaptive: false\n    distanceThreshold: 1.5\n"
    commit_files(root, {"billing/charge.py": "def charge():\n    pass\n", ".kodiai.yml": config}, "initial")
    git("checkout", "-q", "-b", "topic", cwd=root)
    commit_files(
        root, {"billing/charge.py": "def charge():\n    retry_forever()\n"}, "fix: retry card charges"
    )

    embedder = LocalEmbeddingProvider()
    uri = str(tmp_path / "memory.lance")
    store = open_store_for_provider(uri, embedder)  # the 384-d table `kodiai memory import` writes
    assert store is not None
    texts = ["Card charge retried forever without backoff in billing/charge.py", "Typo in README heading"]
    for i, text in enumerate(texts):
        vector = embedder.generate(text, "document")
        assert vector is not None
        record = LearningMemoryRecord(
            repo="acme/widgets",
            owner="acme",
            finding_id=i + 1,
            review_id=1,
            source_repo="acme/widgets",
            finding_text=text,
            severity="major",
            category="correctness",
            file_path="billing/charge.py",
            outcome="accepted",
            embedding_model=embedder.model,
            embedding_dim=embedder.dimensions,
        )
        store.write_memory(record, vector)
    store.close()

    result = runner.invoke(
        app,
        [
            "review",
            "--path",
            str(root),
            "--base",
            "main",
            "--head",
            "topic",
            "--dry-run",
            "--json",
            "--embeddings",
            "local",
            "--memory",
            uri,
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["retrieval"]["status"] == "used"
    assert data["retrieval"]["threshold_method"] == "configured"
    assert data["retrieval"]["results"][0]["finding_text"] == texts[0]
    assert "## Similar Prior Findings (Learning Context)" in data["prompt"] and texts[0] in data["prompt"]


@pytest.mark.slow
def test_model_failure_exits_1_with_the_reason(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real bundled Claude Code CLI against a model endpoint that answers 500 (``ANTHROPIC_BASE_URL``
    pointing at a fake Messages API): the review is not reported as a success; the command exits 1 and
    prints the endpoint's error."""
    from support.fake_anthropic import FAKE_API_KEY, Fail, FakeAnthropic

    with FakeAnthropic(script=lambda _request: Fail(500, message="gateway exploded")) as model:
        for name, value in model.env(home=str(tmp_path / "home"), CLAUDE_CODE_MAX_RETRIES="0").items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_API_KEY)
        git("checkout", "-q", "topic", cwd=repo)
        result = runner.invoke(app, ["review", "--path", str(repo), "--base", "main", "--head", "topic"])
    assert result.exit_code == 1, result.output
    assert "conclusion: error" in result.output
    assert "the review did not complete" in result.output and "500" in result.output
    assert len(model.main_requests) == 1
