"""``kodiai review``: the review of a local branch, through the webhook job's own gather and plan stages.

A local-workspace adapter: the checkout is the workspace, the PR's facts come from git (title and body of
the head commit, its author, the commits of ``base..head``), there is no GitHub to ask for the author's
tier or for advisories, and learned memory is the same LanceDB table ``kodiai memory import`` writes.
For ``kodiai review URL`` the facts and commits are the real PR's instead (a :class:`PullContext`, built
by :mod:`kodiai.review.remote_pr`) and the workspace is its clone. The
prompt it builds is the one the bot would send for that range. :func:`run_local_review` then runs the
executor with GitHub replaced by a recorder, so what would have been posted is shown instead.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from kodiai.config import RepoConfig, RepoConfigError, parse_repo_config
from kodiai.config.loader import MAX_CONFIG_BYTES
from kodiai.execution.executor import ClaudeAgentExecutor, TransportFactory
from kodiai.execution.local_rest import RecordingGitHub
from kodiai.execution.options import ModelCredentials
from kodiai.execution.output_key import build_review_output_key
from kodiai.execution.pacing import PacingPolicy
from kodiai.execution.sandbox import AgentSandbox
from kodiai.execution.types import ExecutionContext, ExecutionResult
from kodiai.github.git_env import UnsafeGitConfigError, harden_args, workspace_git_env
from kodiai.github.workspace import Workspace
from kodiai.handler_kit.deps import LearnedMemory
from kodiai.learning.embeddings import EmbeddingProvider
from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.setup import open_store_for_provider
from kodiai.log import redact, stderr_logger
from kodiai.review.gather import gather, plan_input
from kodiai.review.plan import plan_review
from kodiai.review.pull_request import PullRequestFacts
from kodiai.review.retrieval import RetrievalStep
from kodiai.review.sources import CommitSource, GatherSources

LOCAL_PR_NUMBER = 0
BOT_HANDLES = ["kodiai", "claude"]


class LocalReviewError(Exception):
    """A local review that cannot be built (not a repository, unknown ref, invalid ``.kodiai.yml``)."""


class RetrievedMemory(BaseModel):
    memory_id: int
    distance: float
    adjusted_distance: float
    severity: str
    category: str
    file_path: str
    finding_text: str
    outcome: str
    source_repo: str | None = None
    confidence: str | None = None


class RetrievalReport(BaseModel):
    """What retrieval did: ``used`` (maybe with zero results) or why it was skipped."""

    status: Literal["used", "disabled", "no-store", "no-embedding", "failed"]
    detail: str | None = None
    memory_uri: str | None = None
    query: str | None = None
    threshold_method: str | None = None
    distance_threshold: float | None = None
    results: list[RetrievedMemory] = Field(default_factory=list)


@dataclass(frozen=True)
class PullContext:
    """A real pull request under review: its facts from the API, its clone (with the token, so a shallow
    clone can be deepened for the merge base) and its commit listing."""

    facts: PullRequestFacts
    workspace: Workspace
    commits: CommitSource | None = None
    url: str | None = None


class LocalReview(BaseModel):
    owner: str
    repo: str
    number: int = LOCAL_PR_NUMBER
    url: str | None = None
    base_ref: str
    head_ref: str
    base_sha: str
    head_sha: str
    title: str
    changed_files: list[str]
    config_warnings: list[str] = Field(default_factory=list)
    profile: str
    timeout_seconds: float
    retrieval: RetrievalReport
    prompt: str


def git(repo: Path, *args: str) -> str:
    """``git <args>`` in ``repo`` with the server's hardening (:mod:`kodiai.github.git_env`): the branch
    under review may be anyone's, and the review must not run its hooks, drivers or ``core.fsmonitor``."""
    if not repo.is_dir():
        raise LocalReviewError(f"{repo} is not a directory")
    try:
        env = workspace_git_env(repo)
        done = subprocess.run(
            ["git", *harden_args(args)],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    except FileNotFoundError as exc:
        raise LocalReviewError("git is not installed") from exc
    except UnsafeGitConfigError as exc:
        raise LocalReviewError(f"git {' '.join(args[:2])} refused: {redact(str(exc))}") from exc
    if done.returncode != 0:
        raise LocalReviewError(f"git {' '.join(args[:2])} failed: {redact(done.stderr.strip())}")
    return done.stdout


def repo_identity(repo: Path, override: str | None) -> tuple[str, str]:
    """``owner/name`` from ``--repo``, else the ``origin`` remote, else ``local/<directory>``."""
    if override:
        owner, _, name = override.partition("/")
        if not owner or not name or "/" in name:
            hint = " (a local checkout is --path)" if Path(override).exists() else ""
            raise LocalReviewError(f"--repo must look like owner/name, got {override!r}{hint}")
        return owner, name
    try:
        url = git(repo, "remote", "get-url", "origin").strip()
    except LocalReviewError:
        return "local", repo.resolve().name
    match = re.search(r"[/:]([^/:]+)/([^/]+?)(?:\.git)?/?$", url)
    return (match.group(1), match.group(2)) if match else ("local", repo.resolve().name)


def load_config_at(repo: Path, head_sha: str) -> tuple[RepoConfig, list[str]]:
    """The ``.kodiai.yml`` of the head commit (defaults when absent); a YAML error is fatal. As in the
    webhook's workspace read, a symbolic link or an oversized file is refused before the blob is read."""
    listed = git(repo, "ls-tree", "-l", head_sha, ".kodiai.yml").strip()
    if not listed:
        return RepoConfig(), []
    mode, _kind, _sha, size = listed.split("\t", 1)[0].split()
    if mode == "120000":
        raise LocalReviewError("Invalid .kodiai.yml: the file is a symbolic link, not a regular file")
    if size.isdigit() and int(size) > MAX_CONFIG_BYTES:
        raise LocalReviewError(f"Invalid .kodiai.yml: the file is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        result = parse_repo_config(git(repo, "show", f"{head_sha}:.kodiai.yml"))
    except RepoConfigError as exc:
        raise LocalReviewError(str(exc)) from exc
    return result.config, [
        f"{w.section}: {'; '.join(w.issues)}"
        + (f" (failed closed: {'; '.join(w.failed_closed)})" if w.failed_closed else "")
        for w in result.warnings
    ]


def _resolve(repo: Path, ref: str, which: str) -> str:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except LocalReviewError:
        option = "--base" if which == "base" else "--head"
        raise LocalReviewError(
            f"{which} ref {ref!r} is not a commit in {repo}: pass an existing branch, tag or commit as "
            f"{option} (`git branch -a` lists branches; fetch the remote one first if it is missing)"
        ) from None


def check_not_empty(repo: Path, base_sha: str, head_sha: str, base: str, head: str) -> None:
    """An empty range has nothing to review: say so rather than build a prompt about no changes."""
    if base_sha == head_sha or not git(repo, "diff", "--name-only", f"{base_sha}...{head_sha}").strip():
        raise LocalReviewError(
            f"no changes between base {base!r} and head {head!r} ({base_sha[:12]}...{head_sha[:12]}): "
            "nothing to review; check that --head is the branch with the changes and --base its target"
        )


def local_facts(repo: Path, base: str, head: str, repo_name: str | None) -> PullRequestFacts:
    """The PR a local range stands for: the head commit's subject and body, its author, the commits and
    line counts of ``base...head``."""
    base_sha = _resolve(repo, base, "base")
    head_sha = _resolve(repo, head, "head")
    owner, name = repo_identity(repo, repo_name)
    title, _, body = git(repo, "log", "-1", "--format=%s%n%b", head_sha).partition("\n")
    author = git(repo, "log", "-1", "--format=%an", head_sha).strip()
    added = removed = 0
    for line in git(repo, "diff", "--numstat", f"{base_sha}...{head_sha}").splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            added, removed = added + int(parts[0]), removed + int(parts[1])
    commits = git(repo, "rev-list", "--count", f"{base_sha}..{head_sha}").strip()
    return PullRequestFacts(
        owner=owner,
        repo=name,
        number=LOCAL_PR_NUMBER,
        title=title.strip(),
        body=body.strip() or None,
        author=author,
        base_ref=base,
        base_sha=base_sha,
        head_ref=head,
        head_sha=head_sha,
        additions=added,
        deletions=removed,
        commit_count=int(commits or 0),
    )


def _commit_source(repo: Path, base_sha: str, head_sha: str) -> CommitSource:
    """``(sha, message)`` of the range's commits, newest first, as the PR commit listing gives them."""

    async def commits(count: int) -> list[tuple[str, str]]:
        out = git(repo, "log", f"-n{min(count, 100)}", "--format=%H%x00%B%x01", f"{base_sha}..{head_sha}")
        pairs = []
        for entry in out.split("\x01"):
            sha, sep, message = entry.strip("\n").partition("\x00")
            if sep:
                pairs.append((sha, message))
        return pairs

    return commits


def _report(step: RetrievalStep, memory_uri: str | None) -> RetrievalReport:
    outcome = step.outcome
    if outcome is None:
        return RetrievalReport(
            status=step.status, detail=step.detail, memory_uri=memory_uri, query=step.query
        )
    labels = outcome.confidence
    return RetrievalReport(
        status="used",
        memory_uri=memory_uri,
        query=step.query,
        threshold_method=outcome.threshold.method,
        distance_threshold=outcome.threshold.threshold,
        results=[
            RetrievedMemory(
                memory_id=r.memory_id,
                distance=r.distance,
                adjusted_distance=r.adjusted_distance,
                severity=r.record.severity,
                category=r.record.category,
                file_path=r.record.file_path,
                finding_text=r.record.finding_text,
                outcome=r.record.outcome,
                source_repo=r.source_repo,
                confidence=labels[i] if labels else None,
            )
            for i, r in enumerate(outcome.results)
        ],
    )


def _open_memory(uri: str | None, embedder_factory: Callable[[], EmbeddingProvider]) -> LearnedMemory | None:
    """The table ``kodiai memory import`` writes for this embedder, read-only in spirit (nothing is marked
    stale by a preview); None when there is no store or no embedder (the model is not loaded then)."""
    if not uri or ("://" not in uri and not Path(uri).exists()):
        return None
    embedder = embedder_factory()
    if embedder.dimensions <= 0:
        return None
    store = open_store_for_provider(uri, embedder, mark_stale=False)
    if store is None:
        return None
    return LearnedMemory(store=store, isolation=IsolationLayer(store), embeddings=embedder)


async def build_local_review(
    repo_path: Path,
    base: str,
    head: str = "HEAD",
    *,
    embedder_factory: Callable[[], EmbeddingProvider],
    memory_uri: str | None = None,
    repo_name: str | None = None,
    now: datetime | None = None,
    pull: PullContext | None = None,
) -> LocalReview:
    """Everything the model would be given for ``base...head`` of the repository at ``repo_path``.

    With ``pull``, the PR's own facts (title, body, author, counts from the API) and commit listing are
    used, ``pull.workspace`` is the checkout and ``base``/``head`` are its git refs to diff."""
    if not repo_path.is_dir():
        raise LocalReviewError(f"{repo_path} does not exist: pass a git checkout as --path")
    if not (repo_path / ".git").exists():
        try:
            inside = git(repo_path, "rev-parse", "--is-inside-work-tree").strip() == "true"
        except LocalReviewError:
            inside = False
        if not inside:
            raise LocalReviewError(f"{repo_path} is not a git repository: pass a git checkout as --path")
    if pull is None:
        if repo_name is not None:
            repo_identity(repo_path, repo_name)  # a malformed --repo fails before any git work
        facts = local_facts(repo_path, base, head, repo_name)
        check_not_empty(repo_path, facts.base_sha, facts.head_sha, base, head)
        workspace = Workspace(repo_path, base_url="https://github.com", token="")
        commits: CommitSource | None = _commit_source(repo_path, facts.base_sha, facts.head_sha)
        diff_base, diff_base_ref = facts.base_sha, None
        head_rev = facts.head_sha
        base_label, head_label = base, head
    else:
        facts, workspace, commits = pull.facts, pull.workspace, pull.commits
        diff_base, diff_base_ref, head_rev = base, facts.base_ref, head
        base_label, head_label = facts.base_ref, facts.head_ref
    config, warnings = load_config_at(repo_path, git(repo_path, "rev-parse", head_rev).strip())
    log = stderr_logger(os.environ.get("LOG_LEVEL") or "warn", repo=facts.full_name)
    memory: LearnedMemory | None = None
    no_store_reason: str | None = None
    if config.knowledge.retrieval.enabled:
        try:
            memory = _open_memory(memory_uri, embedder_factory)
        except Exception as exc:  # retrieval is fail-open (behaviour R1 step 32)
            no_store_reason = redact(f"{type(exc).__name__}: {exc}")
            log.warning("Learned memory could not be opened (fail-open)", err=no_store_reason)
    sources = GatherSources(commits=commits, memory=memory, now=now)
    try:
        gathered = await gather(
            facts, config, workspace, sources, log, base=diff_base, base_ref=diff_base_ref, head=head_rev
        )
    finally:
        if memory is not None:
            memory.store.close()
    if not gathered.changed_files:
        raise LocalReviewError(
            f"no file to review between base {base_label!r} and head {head_label!r}: every changed file "
            "matches review.skipPaths in .kodiai.yml"
            if gathered.diff.changed_files
            else f"no changes between base {base_label!r} and head {head_label!r}: nothing to review"
        )
    plan = plan_review(plan_input(facts, config, gathered))
    retrieval = _report(gathered.retrieval, memory_uri)
    if retrieval.status == "no-store" and no_store_reason:
        retrieval = retrieval.model_copy(update={"status": "failed", "detail": no_store_reason})
    elif retrieval.status == "no-store":
        retrieval = retrieval.model_copy(
            update={"detail": "no learned-memory store found", "memory_uri": memory_uri}
        )
    return LocalReview(
        owner=facts.owner,
        repo=facts.repo,
        number=facts.number,
        url=pull.url if pull is not None else None,
        base_ref=base_label,
        head_ref=head_label,
        base_sha=facts.base_sha,
        head_sha=facts.head_sha,
        title=facts.title,
        changed_files=gathered.changed_files,
        config_warnings=warnings,
        profile=plan.profile.selected_profile,
        timeout_seconds=plan.dynamic_timeout_seconds or config.timeout_seconds,
        retrieval=retrieval,
        prompt=plan.prompt,
    )


def local_output_key(review: LocalReview) -> str:
    """A review-output key in the handler's format, with ``local`` for the action and delivery."""
    return build_review_output_key(
        installation_id=0,
        owner=review.owner,
        repo=review.repo,
        pr_number=review.number,
        action="local",
        delivery_id="local",
        head_sha=review.head_sha,
    )


async def run_local_review(
    review: LocalReview,
    workspace: Path,
    *,
    credentials: ModelCredentials,
    transport_factory: TransportFactory | None = None,
    cli_path: str | Path | None = None,
    sandbox: AgentSandbox | None = None,
) -> tuple[ExecutionResult, RecordingGitHub]:
    """Execute the review prompt on ``workspace``; return the result and the recorded output."""
    recorder = RecordingGitHub(review.number, review.head_sha)
    executor = ClaudeAgentExecutor(
        installation_client=None,
        credentials=credentials,
        rest_factory=lambda _ctx: recorder.rest,
        transport_factory=transport_factory,
        cli_path=cli_path,
        pacing=PacingPolicy(min_write_interval=0.0),
        sandbox=sandbox,
    )
    context = ExecutionContext(
        workspace_dir=workspace,
        installation_id=0,
        owner=review.owner,
        repo=review.repo,
        event_type="pull_request.opened",
        pr_number=review.number,
        prompt=review.prompt,
        trigger_body=review.prompt,
        review_output_key=local_output_key(review),
        delivery_id="local",
        dynamic_timeout_seconds=review.timeout_seconds,
        bot_handles=BOT_HANDLES,
    )
    return await executor.execute(context), recorder
