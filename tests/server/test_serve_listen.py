"""``kodiai serve`` as a real process: where it listens and what its start-up log says.

Setup mode listens on 127.0.0.1 when neither ``--host`` nor ``HOST`` is given, and logs the whole setup
link (token included) exactly once; a normal start keeps 0.0.0.0 and never logs a setup token; a
previous webhook secret is announced once, without its value, and verifies deliveries. (How ``--host``
and ``HOST`` override the default: tests/server/test_setup_guidance.py, without a process.)
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from support.fake_github import FakeGitHub
from support.kodiai_process import ServeProcess, listening_sockets
from support.live_server import SECRET, signed_headers

pytestmark = pytest.mark.slow

SETUP_MODE = {"GITHUB_APP_ID": "", "GITHUB_PRIVATE_KEY": "", "GITHUB_WEBHOOK_SECRET": ""}
LINK = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{32})(?=\s)")
OLD_SECRET = "old-webhook-secret-for-rotation"


def started_line(proc: ServeProcess) -> dict[str, object]:
    return [e for e in proc.log_lines() if e.get("msg") == "Kodiai server started"][-1]


def test_setup_mode_listens_on_loopback_and_logs_the_link_once(tmp_path: Path, fake: FakeGitHub) -> None:
    proc = ServeProcess(tmp_path, fake, host=None, HOST="", **SETUP_MODE).start()
    try:
        assert listening_sockets(proc.pid) == [("127.0.0.1", proc.port)]
        assert started_line(proc)["host"] == "127.0.0.1" and started_line(proc)["setupMode"] is True
        text = proc.log_text()
        links = LINK.findall(text)
        assert len(links) == 1 and links[0][0] == str(proc.port), text
        token = links[0][1]
        link = f"http://127.0.0.1:{proc.port}/?token={token}"
        note = [
            e for e in proc.log_lines() if str(e.get("msg")).startswith("Setup mode: listening on 127.0.0.1")
        ]
        assert (
            len(note) == 1
            and "--host 0.0.0.0" in str(note[0]["msg"])
            and "HOST=0.0.0.0" in str(note[0]["msg"])
        )
        page = httpx.get(link, timeout=10)
        assert page.status_code == 200 and f"value='{token}'" in page.text  # the logged token is the real one
        assert "GitHub cannot deliver webhooks to" in page.text  # opened at 127.0.0.1: loopback warning
        assert proc.log_text().count(token) == 1  # nowhere else, not even after the page was served
    finally:
        proc.stop()


def test_normal_start_keeps_0_0_0_0_and_announces_a_previous_secret(tmp_path: Path, fake: FakeGitHub) -> None:
    proc = ServeProcess(tmp_path, fake, host=None, HOST="", GITHUB_WEBHOOK_SECRET_PREVIOUS=OLD_SECRET).start()
    try:
        assert listening_sockets(proc.pid) == [("0.0.0.0", proc.port)]
        assert started_line(proc)["setupMode"] is False
        body = b'{"action": "created", "sender": {"login": "u", "type": "User"}}'
        for secret, status in ((OLD_SECRET, 200), ("some-other-secret-value", 401)):
            headers = signed_headers(body, event="star", secret=secret)
            r = httpx.post(f"{proc.url}/webhooks/github", content=body, headers=headers, timeout=10)
            assert r.status_code == status
        text = proc.log_text()
        assert "token=" not in text and "Setup mode" not in text
        assert (
            text.count("Webhook secret rotation: deliveries signed with GITHUB_WEBHOOK_SECRET_PREVIOUS") == 1
        )
        assert OLD_SECRET not in text and SECRET not in text
    finally:
        proc.stop()
