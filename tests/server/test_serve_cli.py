"""`kodiai serve` start-up failures: one clear FATAL line and exit code 1 (bad key, unreachable GitHub)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.fake_github import FakeGitHub, generate_private_key_pem


def run_serve(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        "JOBS_DB_PATH": str(tmp_path / "jobs.db"),
        "TELEMETRY_DB_PATH": str(tmp_path / "t.db"),
        "KNOWLEDGE_DB_PATH": str(tmp_path / "k.db"),
        "WORKSPACE_ROOT": str(tmp_path / "ws"),
        "EMBEDDING_PROVIDER": "none",
        "LEARNING_MEMORY_URI": str(tmp_path / "memory.lance"),
        "GITHUB_WEBHOOK_SECRET": "serve-cli-webhook-secret",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "kodiai.server", "--port", "0", "--env-file", str(tmp_path / "absent.env")],
        env=full,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_bad_private_key_fails_fast_with_one_message(tmp_path: Path, fake: FakeGitHub) -> None:
    done = run_serve(
        tmp_path,
        GITHUB_APP_ID=str(fake.app_id),
        GITHUB_PRIVATE_KEY=generate_private_key_pem(),
        GITHUB_API_URL=fake.url,
    )
    assert done.returncode == 1
    fatal = [line for line in done.stderr.splitlines() if line.startswith("FATAL:")]
    assert len(fatal) == 1 and "GitHub App authentication failed" in fatal[0] and "HTTP 401" in fatal[0]
    assert "Traceback" not in done.stderr and "BEGIN RSA" not in done.stderr


@pytest.mark.slow
def test_unreachable_github_fails_fast(tmp_path: Path, fake: FakeGitHub) -> None:
    done = run_serve(
        tmp_path,
        GITHUB_APP_ID="1",
        GITHUB_PRIVATE_KEY=fake.private_key_pem,
        GITHUB_API_URL="http://127.0.0.1:9",
    )
    assert done.returncode == 1
    fatal = [line for line in done.stderr.splitlines() if line.startswith("FATAL:")]
    assert len(fatal) == 1 and "http://127.0.0.1:9" in fatal[0]
    assert "Traceback" not in done.stderr
