"""Workspaces: shallow clones in temp dirs (behaviour P4.2–P4.3), with the token kept out of sight.

Unlike the original (token in the clone URL, hence in ``.git/config``), the installation token is
handed to git only through the environment, as an ``http.<base>/.extraHeader`` set with
``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``. It never appears in a URL, in argv,
in ``.git/config`` or in a log line, and every error message is redacted before it leaves.

A workspace's ``.git`` is untrusted once anything but the server has run in the checkout: every git child
gets the hardening of :mod:`kodiai.github.git_env`, and a :class:`Workspace` refuses to run git at all
when its ``.git/config`` (or where ``.git`` points) changed since the server's own last git command.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from kodiai.github.branch_names import validate_branch_name
from kodiai.github.git_env import (
    ConfigEntry,
    UnsafeGitConfigError,
    config_overlay,
    git_child_env,
    harden_args,
    list_config_keys_async,
    neutralizing_config,
    protocols_for,
    workspace_git_env,
    workspace_git_env_async,
)
from kodiai.github.git_stream import Consumer, GitStreamError, StreamOutcome, stream_git
from kodiai.log import get_logger, redact

PREFIX = "kodiai-"
STALE_AFTER_SECONDS = 3600.0
BOT_NAME = "kodiai[bot]"
BOT_EMAIL = "kodiai[bot]@users.noreply.github.com"

TokenProvider = Callable[[int], Awaitable[str]]


class GitCommandError(RuntimeError):
    """A git command failed; the message is already redacted."""


def git_base_url_for(api_url: str) -> str:
    """Where repositories are cloned from: github.com for the public API, the GHES host otherwise."""
    url = api_url.rstrip("/")
    if url in ("https://api.github.com", "http://api.github.com"):
        return "https://github.com"
    return url[: -len("/api/v3")] if url.endswith("/api/v3") else url


def auth_config(base_url: str, token: str | None) -> list[ConfigEntry]:
    """The entry that makes git send ``Authorization`` to ``base_url`` only (never argv or a file)."""
    if not token:
        return []
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return [(f"http.{base_url.rstrip('/')}/.extraHeader", f"Authorization: Basic {basic}")]


def auth_env(base_url: str, token: str | None) -> dict[str, str]:
    """An overlay for :func:`kodiai.github.git_env.git_child_env` (which merges its ``GIT_CONFIG_*``
    entries after the hardening): no prompt, and the auth header of :func:`auth_config`."""
    env = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}
    entries = auth_config(base_url, token)
    if entries:
        env["GIT_CONFIG_COUNT"] = str(len(entries))
        for index, (key, value) in enumerate(entries):
            env[f"GIT_CONFIG_KEY_{index}"] = key
            env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def scrub(text: str, secrets: Sequence[str]) -> str:
    """Replace each secret (and its Basic-auth form) with ``[REDACTED]``, then the generic patterns."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[REDACTED]")
            text = text.replace(base64.b64encode(f"x-access-token:{secret}".encode()).decode(), "[REDACTED]")
    return redact(text)


async def run_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    base_url: str = "https://github.com",
    token: str | None = None,
    git_binary: str = "git",
) -> str:
    """Run ``git <args>`` without a shell; return stdout; raise :class:`GitCommandError` (redacted).

    git gets the hardened, allow-listed environment of :mod:`kodiai.github.git_env` (the repository's
    own driver keys neutralised when ``cwd`` is given), never the server's secrets; commands that print
    diffs get ``--no-ext-diff --no-textconv``."""
    config = auth_config(base_url, token)
    protocols = protocols_for(base_url)
    try:
        if cwd is None or (args and args[0] == "clone"):
            # a clone's repository is the one it creates: nothing of it exists to neutralise yet
            env = git_child_env(config=config, protocols=protocols)
        else:
            env = await workspace_git_env_async(cwd, config, protocols=protocols, git_binary=git_binary)
    except UnsafeGitConfigError as exc:
        raise GitCommandError(scrub(f"git {' '.join(args[:2])} refused: {exc}", [token or ""])) from None
    proc = await asyncio.create_subprocess_exec(
        git_binary,
        *harden_args(args),
        cwd=str(cwd) if cwd else None,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        shown = " ".join(args[:2])
        detail = err.decode("utf-8", "replace").strip()[-2000:]
        raise GitCommandError(scrub(f"git {shown} failed (exit {proc.returncode}): {detail}", [token or ""]))
    return out.decode("utf-8", "replace")


def git_metadata_state(directory: Path) -> tuple[str, bytes] | None:
    """What decides where git's configuration comes from in ``directory``: whether ``.git`` is a real
    directory without a ``commondir``, and the bytes of its ``config``. None before there is a ``.git``."""
    git_dir = directory / ".git"
    if git_dir.is_symlink():
        return ("symlink", b"")
    if not git_dir.exists():
        return None
    if not git_dir.is_dir():
        return ("file", b"")
    if (git_dir / "commondir").exists():
        return ("commondir", b"")
    try:
        return ("dir", (git_dir / "config").read_bytes())
    except OSError:
        return ("dir-without-config", b"")


class Workspace:
    """A cloned repository in a temp dir. Git commands run with the installation's auth header."""

    def __init__(self, directory: Path, *, base_url: str, token: str, git_binary: str = "git") -> None:
        self.dir = directory
        self._base_url = base_url
        self._token = token
        self._git_binary = git_binary
        # the git metadata as the server last left it (a local checkout's own, as it was handed over)
        self._trusted = git_metadata_state(directory)

    def _check_metadata(self) -> None:
        """Refuse when ``.git`` changed since the server's last git command: only the server writes it."""
        if self._trusted is not None and git_metadata_state(self.dir) != self._trusted:
            raise GitCommandError(
                "the workspace's git metadata (.git/config or where .git points) changed outside the "
                "server's own git commands; refusing to run git in it"
            )

    def _remember_metadata(self) -> None:
        self._trusted = git_metadata_state(self.dir)

    def __repr__(self) -> str:
        return f"Workspace(dir={str(self.dir)!r})"

    async def git(self, *args: str) -> str:
        self._check_metadata()
        try:
            return await run_git(
                args, cwd=self.dir, base_url=self._base_url, token=self._token, git_binary=self._git_binary
            )
        except OSError as exc:
            raise GitCommandError(scrub(f"git could not start: {exc}", [self._token])) from None
        finally:
            self._remember_metadata()

    async def git_stream(
        self, args: Sequence[str], consume: Consumer, *, max_bytes: int, stdin: bytes | None = None
    ) -> StreamOutcome:
        """``git <args>`` read in bounded memory (:func:`kodiai.github.git_stream.stream_git`), without the
        token: the diff and listing commands it serves never reach the network. Hardened as :meth:`git`
        is (metadata check, the repository's driver keys neutralised, ``--no-ext-diff --no-textconv``)."""
        self._check_metadata()
        try:
            neutral = neutralizing_config(await list_config_keys_async(self.dir, self._git_binary))
            return await stream_git(
                harden_args(args),
                consume,
                cwd=self.dir,
                max_bytes=max_bytes,
                stdin=stdin,
                extra_env={**auth_env(self._base_url, None), **config_overlay(neutral)},
                git_binary=self._git_binary,
            )
        except (GitStreamError, UnsafeGitConfigError) as exc:
            raise GitCommandError(scrub(str(exc), [self._token])) from None
        finally:
            self._remember_metadata()

    def git_blocking(self, *args: str, timeout: float = 300) -> tuple[int, str]:
        """Run ``git <args>`` synchronously with the workspace's auth; ``(exit code, stdout)``, never raises
        on a non-zero exit (for synchronous callers running in a worker thread); a refused or unstartable
        command is exit 1."""
        try:
            self._check_metadata()
            env = workspace_git_env(
                self.dir,
                auth_config(self._base_url, self._token),
                protocols=protocols_for(self._base_url),
                git_binary=self._git_binary,
            )
        except (GitCommandError, UnsafeGitConfigError, OSError, subprocess.SubprocessError):
            return 1, ""
        try:
            done = subprocess.run(
                [self._git_binary, *harden_args(args)],
                cwd=self.dir,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return 1, ""
        finally:
            self._remember_metadata()
        return done.returncode, done.stdout.decode("utf-8", "replace")

    async def fetch_pull_request_head(self, pr_number: int, local_branch: str = "pr-review") -> None:
        """Fetch ``pull/<n>/head`` into ``local_branch`` and check it out (fork-safe PR checkout)."""
        if isinstance(pr_number, bool) or not isinstance(pr_number, int) or pr_number <= 0:
            raise ValueError(f"PR number must be a positive integer: {pr_number!r}")
        validate_branch_name(local_branch)
        await self.git("fetch", "--quiet", "origin", f"pull/{pr_number}/head:{local_branch}")
        await self.git("checkout", "--quiet", local_branch)

    async def fetch_base_ref(self, base_ref: str, depth: int = 1) -> None:
        """Fetch ``base_ref`` into ``refs/remotes/origin/<base_ref>`` (for diffs against the base)."""
        validate_branch_name(base_ref)
        await self.git(
            "fetch", "--quiet", f"--depth={depth}", "origin", f"{base_ref}:refs/remotes/origin/{base_ref}"
        )

    async def head_sha(self) -> str:
        return (await self.git("rev-parse", "HEAD")).strip()

    async def staged_paths(self) -> list[str]:
        """``git add -A`` then the staged names (deletions included, renames as the new path)."""
        await self.git("add", "-A")
        out = await self.git("diff", "--cached", "--name-only")
        return [line for line in out.splitlines() if line]

    async def commit(self, message: str) -> str:
        """Commit what is staged (identity: the bot's); returns the new HEAD sha."""
        await self.git("commit", "--quiet", "-m", message)
        return await self.head_sha()

    async def push_head(self, remote_ref: str, *, remote: str = "origin") -> str:
        """Push ``HEAD`` to ``<remote_ref>`` (validated) with the installation's auth header; returns HEAD."""
        validate_branch_name(remote_ref)
        sha = await self.head_sha()
        await self.git("push", "--quiet", remote, f"HEAD:refs/heads/{remote_ref}")
        return sha

    async def cleanup(self) -> None:
        await asyncio.to_thread(shutil.rmtree, self.dir, True)


class WorkspaceManager:
    """Creates workspaces under ``root`` (default: the system temp dir) and removes stale ones."""

    def __init__(
        self,
        token_provider: TokenProvider,
        *,
        root: Path | None = None,
        git_base_url: str = "https://github.com",
        git_binary: str = "git",
    ) -> None:
        self._token_provider = token_provider
        self.root = Path(root) if root else Path(tempfile.gettempdir())
        self.git_base_url = git_base_url.rstrip("/")
        self._git_binary = git_binary
        self._log = get_logger("kodiai.github.workspace")

    def clone_url(self, owner: str, repo: str) -> str:
        return f"{self.git_base_url}/{owner}/{repo}.git"

    async def create(
        self, installation_id: int, *, owner: str, repo: str, ref: str, depth: int = 1
    ) -> Workspace:
        """Validate ``ref``, shallow-clone ``owner/repo`` at ``ref``, set the bot identity.

        On any failure the directory is removed and the (redacted) error is raised.
        """
        validate_branch_name(ref)
        for part in (owner, repo):
            if not part or part.startswith(("-", ".")) or "/" in part or ".." in part:
                raise ValueError(f"Invalid repository name: {owner}/{repo}")
        self.root.mkdir(parents=True, exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix=PREFIX, dir=self.root))
        token = ""
        try:
            token = await self._token_provider(installation_id)
            workspace = Workspace(
                directory, base_url=self.git_base_url, token=token, git_binary=self._git_binary
            )
            await workspace.git(
                "clone",
                "--quiet",
                f"--depth={int(depth)}",
                "--single-branch",
                "--branch",
                ref,
                # the bot identity goes into the clone's config with the clone (two git runs fewer)
                "--config",
                f"user.name={BOT_NAME}",
                "--config",
                f"user.email={BOT_EMAIL}",
                "--",
                self.clone_url(owner, repo),
                str(directory),
            )
        except (GitCommandError, asyncio.CancelledError):
            shutil.rmtree(directory, ignore_errors=True)
            raise
        except BaseException as exc:
            shutil.rmtree(directory, ignore_errors=True)
            message = scrub(
                f"Workspace creation failed for {owner}/{repo}: {type(exc).__name__}: {exc}", [token]
            )
            raise GitCommandError(message) from None
        self._log.info("Workspace created", owner=owner, repo=repo, ref=ref, dir=str(directory))
        return workspace

    @asynccontextmanager
    async def workspace(
        self, installation_id: int, *, owner: str, repo: str, ref: str, depth: int = 1
    ) -> AsyncIterator[Workspace]:
        """``async with manager.workspace(...) as ws:`` — the directory is removed whatever happens."""
        ws = await self.create(installation_id, owner=owner, repo=repo, ref=ref, depth=depth)
        try:
            yield ws
        finally:
            await asyncio.shield(ws.cleanup())

    def cleanup_stale(self, *, now: float | None = None, max_age: float = STALE_AFTER_SECONDS) -> int:
        """Remove ``kodiai-*`` entries under ``root`` older than ``max_age`` seconds (by mtime)."""
        current = time.time() if now is None else now
        removed = 0
        try:
            entries = list(self.root.iterdir()) if self.root.exists() else []
        except OSError as exc:
            self._log.warning("Failed to clean up stale workspaces (non-fatal)", err=str(exc))
            return 0
        for entry in entries:
            try:
                if not entry.name.startswith(PREFIX) or current - entry.lstat().st_mtime <= max_age:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
                removed += 1
            except OSError:
                continue
        if removed:
            self._log.info("Stale workspaces cleaned up", removed=removed)
        return removed
