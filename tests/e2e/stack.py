"""The end-to-end stack: ``kodiai serve`` as a real process between a fake GitHub and a fake model.

The process itself is :class:`support.kodiai_process.KodiaiProcess` (the one launcher); this module holds
the e2e constants and payloads.

- GitHub: :class:`support.fake_github.FakeGitHub` with the PR routes and git smart HTTP
  (``git http-backend``), so the server clones over HTTP with the installation token header.
- The model: :class:`support.fake_anthropic.FakeAnthropic`; the server runs the real Claude Code CLI
  bundled with claude-agent-sdk, pointed at it by ``ANTHROPIC_BASE_URL``.
- Kodiai: ``python -m kodiai.server`` with its own SQLite files, LanceDB directory and workspace root
  under the test's temp dir, the real local embedder, and JSON log lines in ``server.log``.
"""

from __future__ import annotations

from typing import Any

from support.gitrepo import BareRepo
from support.kodiai_process import E2E_SECRET

SECRET = E2E_SECRET
OWNER, REPO, INSTALLATION = "acme", "widgets", 42


def pull_payload(
    repo: BareRepo,
    number: int,
    *,
    head_sha: str,
    base_sha: str,
    branch: str,
    title: str,
    action: str = "opened",
    author: str = "alice",
    additions: int = 10,
    deletions: int = 0,
    delivery_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``pull_request`` webhook for a same-repository PR of ``repo``."""
    base_repo = {"name": repo.name, "full_name": f"{repo.owner}/{repo.name}", "owner": {"login": repo.owner}}
    return {
        "action": action,
        "number": number,
        "pull_request": {
            "number": number,
            "title": title,
            "body": "Please review.",
            "draft": False,
            "state": "open",
            "user": {"login": author, "type": "User"},
            "author_association": "MEMBER",
            "head": {"ref": branch, "sha": head_sha, "repo": base_repo},
            "base": {"ref": "main", "sha": base_sha, "repo": base_repo},
            "labels": [],
            "additions": additions,
            "deletions": deletions,
            "commits": 1,
        },
        "repository": {**base_repo, "id": 7, "private": False, "default_branch": "main"},
        "installation": {"id": INSTALLATION},
        "sender": {"login": author, "type": "User"},
        **(delivery_extra or {}),
    }


def summary(path: str, line: int, title: str) -> str:
    """The summary comment a scripted model posts for one [MAJOR] finding."""
    return "\n".join(
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
            f"[MAJOR] {path} ({line}): {title}",
            "The input is not checked.",
            "",
            "## Verdict",
            ":red_circle: **Address before merging** -- 1 blocking issue(s) found",
            "</details>",
        ]
    )
