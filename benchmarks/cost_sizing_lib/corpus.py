"""Real pull-request-sized changes without GitHub: two published versions of a real project.

The registries are the only outside source this workplace reaches, and a project's consecutive releases are
a real change by its real authors: version A unpacked as the base commit, version B as the head commit of
a branch, in a real git repository. A patch release is a small PR, a minor release a medium one, a major
or a large minor release a large one. Downloads (``pip download --no-binary :all:`` for PyPI sdists,
``npm pack`` for npm tarballs) and the built repositories are cached, so a re-run is offline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

GIT_ENV = {
    "GIT_AUTHOR_NAME": "release",
    "GIT_AUTHOR_EMAIL": "release@example.invalid",
    "GIT_COMMITTER_NAME": "release",
    "GIT_COMMITTER_EMAIL": "release@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}
BASE_BRANCH = "main"


class CorpusError(RuntimeError):
    """A release could not be downloaded or unpacked (no registry access and nothing cached)."""


@dataclass(frozen=True)
class Release:
    """``package`` from ``base`` to ``head`` on ``registry``: one pull request of the corpus."""

    name: str
    registry: Literal["pypi", "npm"]
    package: str
    base: str
    head: str
    language: str

    @property
    def branch(self) -> str:
        return f"release-{self.head}"

    @property
    def label(self) -> str:
        return f"{self.package} {self.base}→{self.head}"


#: Smallest to largest. Sizes (files, lines added+removed) as the releases' sources differ.
CORPUS: tuple[Release, ...] = (
    Release("ms", "npm", "ms", "2.1.2", "2.1.3", "JavaScript"),  # 4 files, 16 lines
    Release("type-fest", "npm", "type-fest", "4.18.0", "4.19.0", "TypeScript"),  # 10 files, 122
    Release("requests", "pypi", "requests", "2.32.2", "2.32.3", "Python"),  # 5 files, 123
    Release("flask", "pypi", "flask", "2.3.3", "3.0.0", "Python"),  # 26 files, ~3.7k
    Release("pydantic", "pypi", "pydantic", "2.6.4", "2.7.0", "Python"),  # 106 files, ~6k
    Release("sphinx", "pypi", "sphinx", "7.2.6", "7.3.0", "Python"),  # 673 files, ~165k
)


@dataclass(frozen=True)
class PullCase:
    """A built pull request: ``repo`` with ``base`` and ``head`` refs."""

    name: str
    label: str
    language: str
    repo: Path
    base: str
    head: str


def cache_root() -> Path:
    """``$KODIAI_BENCH_CACHE``, else ``$XDG_CACHE_HOME/kodiai-benchmarks/cost-sizing`` (``~/.cache``)."""
    explicit = os.environ.get("KODIAI_BENCH_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "kodiai-benchmarks" / "cost-sizing"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **GIT_ENV, "HOME": str(repo)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise CorpusError(f"git {' '.join(args[:3])} failed in {repo}: {done.stderr.strip()}")
    return done.stdout


def _archive(downloads: Path, release: Release, version: str) -> Path | None:
    stem = release.package.replace("-", "_").lower()
    for candidate in sorted(downloads.iterdir()) if downloads.is_dir() else []:
        lowered = candidate.name.lower().replace("-", "_")
        if lowered.startswith(f"{stem}_{version}.") and candidate.name.endswith((".tar.gz", ".tgz")):
            return candidate
    return None


def download(release: Release, version: str, downloads: Path, timeout: float = 600) -> Path:
    """The release's source archive, from the cache or the registry (its ordinary client)."""
    found = _archive(downloads, release, version)
    if found is not None:
        return found
    downloads.mkdir(parents=True, exist_ok=True)
    spec = f"{release.package}=={version}" if release.registry == "pypi" else f"{release.package}@{version}"
    if release.registry == "pypi":
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q"]
        argv += ["-d", str(downloads), spec]
    else:
        if shutil.which("npm") is None:
            raise CorpusError(f"cannot download {spec}: npm is not installed and the archive is not cached")
        argv = ["npm", "pack", spec, "--pack-destination", str(downloads), "--silent"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise CorpusError(f"downloading {spec} timed out after {timeout:.0f}s") from None
    found = _archive(downloads, release, version)
    if done.returncode != 0 or found is None:
        detail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise CorpusError(
            f"cannot download {spec} from {release.registry} (is the registry reachable?): "
            + " | ".join(detail)
            + f"\n  or place the archive in {downloads} by hand"
        )
    return found


def unpack(archive: Path, dest: Path) -> None:
    """The archive's single top-level directory's contents into ``dest`` (tarfile's ``data`` filter:
    no absolute paths, no links out, no device files)."""
    with tempfile.TemporaryDirectory(dir=dest.parent) as scratch, tarfile.open(archive) as tar:
        tar.extractall(scratch, filter="data")
        (top,) = list(Path(scratch).iterdir())
        for entry in top.iterdir():
            shutil.move(str(entry), dest / entry.name)


def build(release: Release, root: Path | None = None) -> PullCase:
    """The git repository of ``release`` (built once, then reused): base on ``main``, head on a branch."""
    root = root or cache_root()
    repo = root / "repos" / f"{release.name}-{release.base}-{release.head}"
    case = PullCase(release.name, release.label, release.language, repo, BASE_BRANCH, release.branch)
    if (repo / ".git" / "kodiai-bench-complete").exists():
        return case
    downloads = root / "downloads"
    base_archive = download(release, release.base, downloads)
    head_archive = download(release, release.head, downloads)
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", BASE_BRANCH)
    unpack(base_archive, repo)
    git(repo, "add", "-A", "-f")
    git(repo, "commit", "-q", "-m", f"{release.package} {release.base}")
    git(repo, "checkout", "-q", "-b", release.branch)
    git(repo, "rm", "-r", "-q", "--cached", ".")
    for entry in repo.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    unpack(head_archive, repo)
    git(repo, "add", "-A", "-f")
    message = (
        f"Release {release.package} {release.head}\n\n"
        f"The published source of {release.package} {release.head} over {release.base}."
    )
    git(repo, "commit", "-q", "-m", message)
    (repo / ".git" / "kodiai-bench-complete").write_text("ok\n")
    return case


def local_case(root: Path) -> PullCase:
    """A tiny PR built here, with no download: one Python file gains a helper (the smoke run's PR)."""
    repo = root / "tiny"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", BASE_BRANCH)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "calc")
    git(repo, "checkout", "-q", "-b", "add-ratio")
    (repo / "calc.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef ratio(a, b):\n    return a / b\n"
    )
    git(repo, "commit", "-q", "-am", "Add a ratio helper")
    return PullCase("tiny", "local tiny PR", "Python", repo, BASE_BRANCH, "add-ratio")
