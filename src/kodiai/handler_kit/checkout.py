"""The workspace steps every handler shares: a PR clone (fork-safe when asked) and its trusted
``.kodiai.yml``.

All are fail-closed: a clone, fetch or YAML error reaches the job's outer catch and its error comment.
The configuration comes from the PR head only for a same-repository PR whose author has write access;
otherwise from the base branch's blob (read through git, never from the checkout), see
:mod:`kodiai.config.trust`.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from kodiai.config import CONFIG_FILENAME, RepoConfig, RepoConfigError, load_repo_config, parse_repo_config
from kodiai.config.loader import MAX_CONFIG_BYTES, RepoConfigResult, log_section_warnings
from kodiai.config.trust import ConfigSource, choose_pull_request_tree
from kodiai.github.branch_names import validate_branch_name
from kodiai.github.permissions import access_level
from kodiai.github.rest import RestApi
from kodiai.github.workspace import Workspace, WorkspaceManager
from kodiai.log import Logger

#: git's mode of a regular blob (``100755`` is an executable one); a symlink is ``120000``.
_REGULAR_MODES = frozenset({"100644", "100755"})


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


def _log_warnings(result: RepoConfigResult, log: Logger) -> None:
    """One warning line per invalid section; a guarded setting that failed closed (e.g. an unreadable
    ``mention.allowedUsers``: nobody may mention) logs "..., guarded settings failed closed"."""
    log_section_warnings(result, log)


async def load_workspace_config(ws: Workspace, log: Logger) -> RepoConfig:
    """``.kodiai.yml`` of the workspace (defaults when absent); an invalid section falls back to its
    defaults with a warning, a YAML error raises."""
    result = await asyncio.to_thread(load_repo_config, ws.dir)
    _log_warnings(result, log)
    return result.config


async def read_ref_config_text(ws: Workspace, ref: str) -> bytes | None:
    """The bytes of ``.kodiai.yml`` at the tip of ``refs/remotes/origin/<ref>`` (None when absent).

    Read from git's object store, not the checkout: ``ls-tree`` gives the entry's mode, so a symbolic link
    (mode ``120000``) or a submodule is refused without being followed, and ``cat-file -s`` the size, so an
    oversized blob is refused before it is read."""
    validate_branch_name(ref)
    tree = f"refs/remotes/origin/{ref}"
    listing = await ws.git("ls-tree", "-z", "--full-tree", tree, "--", CONFIG_FILENAME)
    entry = next((e for e in listing.split("\0") if e), None)
    if entry is None:
        return None
    meta, _, name = entry.partition("\t")
    parts = meta.split()
    if name != CONFIG_FILENAME or len(parts) != 3:
        return None
    mode, kind, sha = parts
    if kind != "blob" or mode not in _REGULAR_MODES:
        what = "a symbolic link" if mode == "120000" else f"not a regular file (mode {mode})"
        raise RepoConfigError(f"Invalid .kodiai.yml: the file on `{ref}` is {what}")
    size = int((await ws.git("cat-file", "-s", sha)).strip() or "0")
    if size > MAX_CONFIG_BYTES:
        raise RepoConfigError(f"Invalid .kodiai.yml: the file is larger than {MAX_CONFIG_BYTES} bytes")
    text = await ws.git("cat-file", "blob", sha)
    return text.encode("utf-8")


async def load_ref_config(ws: Workspace, ref: str, log: Logger) -> tuple[RepoConfig, bool]:
    """``.kodiai.yml`` of a fetched ref (defaults when absent) and whether the file was there; warnings
    and errors as :func:`load_workspace_config`."""
    raw = await read_ref_config_text(ws, ref)
    if raw is None:
        return RepoConfig(), False
    result = await asyncio.to_thread(parse_repo_config, raw)
    _log_warnings(result, log)
    return result.config, True


async def load_base_only_settings(ws: Workspace, ref: str, log: Logger) -> RepoConfig:
    """The base branch's ``.kodiai.yml`` for the keys only the base may set (``mention.allowedDomains``)
    when the run itself follows the head's file. Fail-soft to defaults (no web access): a broken base file
    must not fail a run the head's valid file governs."""
    try:
        config, _found = await load_ref_config(ws, ref, log)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.warning("Base branch .kodiai.yml unreadable; base-only settings use defaults", err=str(exc)[:300])
        return RepoConfig()
    return config


@dataclass(frozen=True)
class TrustedConfig:
    """The configuration a run obeys and where it came from."""

    config: RepoConfig
    source: ConfigSource


async def load_pull_request_config(
    ws: Workspace,
    rest: RestApi,
    *,
    owner: str,
    repo: str,
    author: str | None,
    is_fork: bool,
    base_ref: str,
    log: Logger,
) -> TrustedConfig:
    """The trusted ``.kodiai.yml`` of a PR run. The workspace's checkout must be the PR head and
    ``refs/remotes/origin/<base_ref>`` fetched (:func:`clone_for_pull_request` does both).

    A fork never governs itself (no lookup); otherwise the author's permission decides, fail-closed: a
    failed lookup reads the base branch."""
    access = "unknown" if is_fork else await access_level(rest, owner, repo, author)
    tree, reason = choose_pull_request_tree(is_fork=is_fork, author_access=access)
    if tree == "head":
        config = await load_workspace_config(ws, log)
        found = os.path.lexists(ws.dir / CONFIG_FILENAME)
        source = ConfigSource(tree="head", found=found)
    else:
        config, found = await load_ref_config(ws, base_ref, log)
        source = ConfigSource(tree="base", found=found, ref=base_ref, reason=reason)
    log.info(
        "Configuration chosen",
        gate="trusted-config",
        configSource=source.label,
        configTree=source.tree,
        configReason=source.reason,
        configRef=source.ref,
        authorAccess=access,
    )
    return TrustedConfig(config, source)
