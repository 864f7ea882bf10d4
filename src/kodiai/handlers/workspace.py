"""The workspace steps every handler shares: a PR clone (fork-safe when asked) and its ``.kodiai.yml``.

Both are fail-closed: a clone, fetch or YAML error reaches the job's outer catch and its error comment.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kodiai.config import RepoConfig, load_repo_config
from kodiai.github.workspace import Workspace, WorkspaceManager


async def clone_for_pull_request(
    manager: WorkspaceManager,
    installation_id: int,
    *,
    owner: str,
    repo: str,
    ref: str,
    depth: int,
    base_ref: str,
    pull_head: tuple[int, str] | None = None,
) -> Workspace:
    """Clone ``owner/repo`` at ``ref``; with ``pull_head = (n, branch)`` fetch ``pull/<n>/head`` into
    ``branch`` and check it out (the fork-safe PR checkout); then fetch the base ref (depth 1). The clone
    is removed when a fetch fails."""
    ws = await manager.create(installation_id, owner=owner, repo=repo, ref=ref, depth=depth)
    try:
        if pull_head is not None:
            await ws.fetch_pull_request_head(*pull_head)
        await ws.fetch_base_ref(base_ref, depth=1)
    except BaseException:
        await asyncio.shield(ws.cleanup())
        raise
    return ws


async def load_workspace_config(ws: Workspace, log: Any) -> RepoConfig:
    """``.kodiai.yml`` of the workspace (defaults when absent); an invalid section falls back to its
    defaults with a warning, a YAML error raises."""
    result = await asyncio.to_thread(load_repo_config, ws.dir)
    for warning in result.warnings:
        log.warning("Config section invalid, using defaults", section=warning.section, issues=warning.issues)
    return result.config
