"""Local bare git repositories that stand in for GitHub clone URLs in tests (real ``git``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def git(*args: str, cwd: Path | str) -> str:
    """Run git with a fixed identity; return stdout; raise with stderr on failure."""
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd)}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def commit_files(work: Path, files: dict[str, str], message: str) -> str:
    """Write files into a work tree, commit them, return the new HEAD sha."""
    for rel, text in files.items():
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", message, cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


class BareRepo:
    """A bare repository at ``<root>/<owner>/<name>.git`` plus a scratch work tree to push from.

    The layout matches the workspace manager's URL scheme ``<base>/<owner>/<name>.git``, so a test
    points the manager's git base URL at ``root`` (``file://`` or a plain path).
    """

    def __init__(self, root: Path, owner: str, name: str, *, default_branch: str = "main") -> None:
        self.root = root
        self.owner = owner
        self.name = name
        self.path = root / owner / f"{name}.git"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        git("init", "-q", "--bare", "-b", default_branch, str(self.path), cwd=root)
        self.work = root / "_work" / owner / name
        self.work.mkdir(parents=True, exist_ok=True)
        git("init", "-q", "-b", default_branch, cwd=self.work)
        git("remote", "add", "origin", str(self.path), cwd=self.work)
        self.default_branch = default_branch

    def commit(self, files: dict[str, str], message: str = "change", *, branch: str | None = None) -> str:
        """Commit files on ``branch`` (created from the current HEAD if new) and push it."""
        branch = branch or self.default_branch
        if not self._has_commits():
            if git("symbolic-ref", "--short", "HEAD", cwd=self.work) != branch:
                git("checkout", "-q", "-b", branch, cwd=self.work)
        elif git("branch", "--list", branch, cwd=self.work):
            git("checkout", "-q", branch, cwd=self.work)
        else:
            git("checkout", "-q", "-b", branch, cwd=self.work)
        sha = commit_files(self.work, files, message)
        git("push", "-q", "origin", f"{branch}:{branch}", cwd=self.work)
        return sha

    def add_pull_head(self, number: int, files: dict[str, str], *, from_branch: str | None = None) -> str:
        """Create ``refs/pull/<number>/head`` (what GitHub exposes for every PR, forks included)."""
        base = from_branch or self.default_branch
        git("checkout", "-q", base, cwd=self.work)
        git("checkout", "-q", "-B", f"_pr{number}", cwd=self.work)
        sha = commit_files(self.work, files, f"pr {number}")
        git("push", "-q", "origin", f"_pr{number}:refs/pull/{number}/head", cwd=self.work)
        git("checkout", "-q", base, cwd=self.work)
        return sha

    def _has_commits(self) -> bool:
        try:
            git("rev-parse", "--verify", "-q", "HEAD", cwd=self.work)
        except RuntimeError:
            return False
        return True
