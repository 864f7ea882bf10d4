"""Write mode never pushes the server's own secrets or a token, whatever ``write.secretScan.enabled`` says
(port deviation: the original's flag turned every detector off). The mention handler end to end: real
git, the fake GitHub, the refusal reply; the App key registered as ``kodiai serve`` does at start."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from kodiai.metrics import Metrics
from kodiai.server.composition import guard_outbound_secrets
from kodiai.settings import Settings
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.handler_fixtures import mention_harness
from support.mention_harness import MentionHarness

#: Scan off, so only the always-on detectors can refuse.
WRITE_ON_SCAN_OFF = "write:\n  enabled: true\n  secretScan:\n    enabled: false\n"


@pytest.fixture
def mh(tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]) -> Iterator[MentionHarness]:
    with mention_harness(tmp_path, fake_server, clear="all", grant="alice") as h:
        yield h


@pytest.fixture
def served(fake_server: tuple[FakeGitHub, PrState]) -> Iterator[Metrics]:
    """The App key and webhook secret known to the scanner, hits counted (``guard_outbound_secrets``)."""
    fake, _ = fake_server
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        github_app_id=str(fake.app_id),
        github_private_key=fake.private_key_pem,
        github_webhook_secret="webhook " + secrets.token_hex(12),
    )
    runtime = SimpleNamespace(metrics=Metrics(), closers=[])
    guard_outbound_secrets(runtime, settings)  # type: ignore[arg-type]
    yield runtime.metrics
    for close in runtime.closers:
        close()


def refused_count(metrics: Metrics, surface: str) -> float:
    value = metrics.registry.get_sample_value(
        "kodiai_outbound_secret_hits_total", {"surface": surface, "action": "refused"}
    )
    return value or 0.0


async def test_a_file_holding_the_app_private_key_body_is_not_pushed(
    mh: MentionHarness, served: Metrics, fake_server: tuple[FakeGitHub, PrState]
) -> None:
    """The key body without its BEGIN line: no regex sees it, the exact-value match does."""
    pem = fake_server[0].private_key_pem
    body = "\n".join(pem.strip().splitlines()[1:-1])
    mh.open_pr(config=WRITE_ON_SCAN_OFF)
    before = mh.bare_log("feature")
    mh.write_on_execute({"docs/notes.md": f"# Notes\n\n{body}\n"})
    await mh.mention("@kodiai apply: write the notes", comment_id=6101)
    reply = mh.issue_comments()[-1]["body"]
    assert "Reason: write-policy-secret-detected" in reply
    assert "Detector: server-secret" in reply and "File: docs/notes.md" in reply
    assert all(line not in reply for line in body.splitlines())
    assert mh.bare_log("feature") == before and mh.bot_pulls() == []
    assert refused_count(served, "pushed_file") == 1.0


async def test_a_private_key_block_is_refused_even_with_the_scan_disabled(
    mh: MentionHarness, served: Metrics
) -> None:
    mh.open_pr(config=WRITE_ON_SCAN_OFF)
    before = mh.bare_log("feature")
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
    mh.write_on_execute({"deploy/key.txt": key})
    await mh.mention("@kodiai apply: add the key", comment_id=6102)
    reply = mh.issue_comments()[-1]["body"]
    assert "Detector: regex:private-key" in reply and "File: deploy/key.txt" in reply
    assert mh.bare_log("feature") == before
    assert refused_count(served, "pushed_file") == 1.0


async def test_a_binary_looking_file_cannot_smuggle_a_token(mh: MentionHarness, served: Metrics) -> None:
    """A NUL byte makes git call the file binary (no ``+`` lines); the scan reads it with ``--text``."""
    mh.open_pr(config=WRITE_ON_SCAN_OFF)
    before = mh.bare_log("feature")
    token = "ghs_" + "R4nd0mT0k3nV4lu3" * 2 + "abcd"
    mh.write_on_execute({"assets/blob.bin": f"\x00\x01binary\n{token}\n"})
    await mh.mention("@kodiai apply: add the asset", comment_id=6103)
    reply = mh.issue_comments()[-1]["body"]
    assert "Detector: regex:github-token" in reply and token not in reply
    assert mh.bare_log("feature") == before
