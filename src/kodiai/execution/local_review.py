"""``kodiai review``: build the review context of a local branch as the review handler would.

Diff via real ``git`` (``base...head``, like a PR), the head's ``.kodiai.yml``, diff analysis, the review
profile, the timeout estimate, retrieval against the local learned-memory store when one is present,
and the review prompt. Nothing here talks to GitHub or the model; :func:`run_local_review` runs the
executor with GitHub replaced by a recorder so the output can be shown instead of posted.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from kodiai.config import RepoConfig, RepoConfigError, parse_repo_config
from kodiai.learning.calibration import resolve_cut
from kodiai.learning.confidence import confidence_labels
from kodiai.learning.embeddings import EmbeddingProvider
from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.memory_store import open_memory_store
from kodiai.learning.pipeline import retrieve_context
from kodiai.learning.retrieval_query import RetrievalQuerySignals, build_retrieval_query
from kodiai.log import get_logger, redact
from kodiai.review.diff_analysis import DiffAnalysis, analyze_diff
from kodiai.review.profiles import resolve_review_profile
from kodiai.review.prompt import (
    ReviewPromptContext,
    build_retrieval_context,
    build_review_prompt,
    match_path_instructions,
)
from kodiai.review.timeout import compute_language_complexity, estimate_timeout_risk

#: Profile presets (spec/review.md §1 step 33): min level, max comments, ignored areas, focus areas.
PRESETS: dict[str, tuple[str, int, list[str], list[str]]] = {
    "strict": ("minor", 15, [], []),
    "balanced": ("medium", 7, ["style"], []),
    "minimal": ("major", 3, ["style", "documentation"], ["security", "correctness"]),
}


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


class LocalReview(BaseModel):
    owner: str
    repo: str
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
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False, timeout=120
        )
    except FileNotFoundError as exc:
        raise LocalReviewError("git is not installed") from exc
    if done.returncode != 0:
        raise LocalReviewError(f"git {' '.join(args[:2])} failed: {redact(done.stderr.strip())}")
    return done.stdout


def repo_identity(repo: Path, override: str | None) -> tuple[str, str]:
    """``owner/name`` from ``--repo-name``, else the ``origin`` remote, else ``local/<directory>``."""
    if override:
        owner, _, name = override.partition("/")
        if not owner or not name:
            raise LocalReviewError(f"--repo-name must look like owner/name, got {override!r}")
        return owner, name
    try:
        url = git(repo, "remote", "get-url", "origin").strip()
    except LocalReviewError:
        return "local", repo.resolve().name
    match = re.search(r"[/:]([^/:]+)/([^/]+?)(?:\.git)?/?$", url)
    return (match.group(1), match.group(2)) if match else ("local", repo.resolve().name)


def load_config_at(repo: Path, head_sha: str) -> tuple[RepoConfig, list[str]]:
    """The ``.kodiai.yml`` of the head commit (defaults when absent); a YAML error is fatal."""
    listed = git(repo, "ls-tree", "--name-only", head_sha, ".kodiai.yml").strip()
    if not listed:
        return RepoConfig(), []
    try:
        result = parse_repo_config(git(repo, "show", f"{head_sha}:.kodiai.yml"))
    except RepoConfigError as exc:
        raise LocalReviewError(str(exc)) from exc
    return result.config, [f"{w.section}: {'; '.join(w.issues)}" for w in result.warnings]


def _apply_profile(config: RepoConfig, lines_changed: int | float) -> tuple[str, dict[str, Any]]:
    review = config.review
    resolved = resolve_review_profile(None, review.profile, lines_changed)
    level, max_comments, ignored, focus = PRESETS.get(resolved.selected_profile, PRESETS["balanced"])
    return resolved.selected_profile, {
        "severity_min_level": level if review.severity.min_level == "minor" else review.severity.min_level,
        "max_comments": max_comments if review.max_comments == 7 else review.max_comments,
        "focus_areas": list(review.focus_areas) or focus,
        "ignored_areas": list(review.ignored_areas) or ignored,
    }


def _retrieve(
    config: RepoConfig,
    analysis: DiffAnalysis,
    *,
    owner: str,
    repo: str,
    title: str,
    body: str,
    changed_files: list[str],
    memory_uri: str | None,
    embedder_factory: Callable[[], EmbeddingProvider],
    now: datetime | None,
) -> RetrievalReport:
    settings = config.knowledge.retrieval
    if not settings.enabled:
        return RetrievalReport(status="disabled", detail="knowledge.retrieval.enabled is false")
    if not memory_uri or ("://" not in memory_uri and not Path(memory_uri).exists()):
        return RetrievalReport(
            status="no-store", memory_uri=memory_uri, detail="no learned-memory store found"
        )
    query = build_retrieval_query(
        RetrievalQuerySignals(
            pr_title=title,
            pr_body=body or None,
            detected_languages=list(analysis.files_by_language),
            risk_signals=analysis.risk_signals,
            top_file_paths=changed_files[:15],
        )
    )
    try:
        embedder = embedder_factory()
        vector = embedder.generate(query, "query") if embedder.dimensions else None
        if vector is None:
            return RetrievalReport(status="no-embedding", memory_uri=memory_uri, query=query)
        store = open_memory_store(memory_uri, embedder.dimensions)
        try:
            outcome = retrieve_context(
                IsolationLayer(store),
                vector,
                repo=f"{owner}/{repo}",
                owner=owner,
                sharing_enabled=config.knowledge.sharing.enabled,
                pr_languages=list(analysis.files_by_language),
                top_k=int(settings.top_k),
                distance_threshold=settings.distance_threshold,
                adaptive=settings.adaptive,
                now=now,
                cut=resolve_cut(embedder.model, settings.cut_strategy, settings.calibration),
            )
        finally:
            store.close()
    except Exception as exc:  # retrieval is fail-open (spec/review.md §1 step 32)
        get_logger("kodiai.execution.local_review").warning(
            "Retrieval failed (fail-open)", error=redact(str(exc))
        )
        return RetrievalReport(status="failed", memory_uri=memory_uri, query=query, detail=redact(str(exc)))
    labels = (
        confidence_labels([r.distance for r in outcome.results])
        if settings.confidence_labels is not False
        else None
    )
    return RetrievalReport(
        status="used",
        memory_uri=memory_uri,
        query=query,
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


def build_local_review(
    repo_path: Path,
    base: str,
    head: str = "HEAD",
    *,
    embedder_factory: Callable[[], EmbeddingProvider],
    memory_uri: str | None = None,
    repo_name: str | None = None,
    now: datetime | None = None,
) -> LocalReview:
    """Everything the model would be given for ``base...head`` of the repository at ``repo_path``."""
    if (
        not (repo_path / ".git").exists()
        and git(repo_path, "rev-parse", "--is-inside-work-tree").strip() != "true"
    ):
        raise LocalReviewError(f"{repo_path} is not a git repository")
    base_sha = git(repo_path, "rev-parse", "--verify", f"{base}^{{commit}}").strip()
    head_sha = git(repo_path, "rev-parse", "--verify", f"{head}^{{commit}}").strip()
    owner, repo = repo_identity(repo_path, repo_name)
    config, warnings = load_config_at(repo_path, head_sha)
    span = f"{base_sha}...{head_sha}"
    changed = [f for f in git(repo_path, "diff", "--name-only", span).split("\n") if f]
    numstat = [line for line in git(repo_path, "diff", "--numstat", span).split("\n") if line]
    diff_text = git(repo_path, "diff", span)
    title, _, body = git(repo_path, "log", "-1", "--format=%s%n%b", head_sha).partition("\n")
    author = git(repo_path, "log", "-1", "--format=%an", head_sha).strip()
    categories = (
        config.review.file_categories.model_dump(exclude_none=True) if config.review.file_categories else None
    )
    analysis = analyze_diff(
        {
            "changed_files": changed,
            "numstat_lines": numstat,
            "diff_content": diff_text,
            "file_categories": categories,
        }
    )
    lines = analysis.metrics.total_lines_added + analysis.metrics.total_lines_removed
    profile, preset = _apply_profile(config, lines)
    estimate = estimate_timeout_risk(
        len(changed),
        lines,
        compute_language_complexity(analysis.files_by_language),
        analysis.is_large_pr,
        config.timeout_seconds,
    )
    retrieval = _retrieve(
        config,
        analysis,
        owner=owner,
        repo=repo,
        title=title.strip(),
        body=body.strip(),
        changed_files=changed,
        memory_uri=memory_uri,
        embedder_factory=embedder_factory,
        now=now,
    )
    review = config.review
    retrieval_ctx = None
    if retrieval.results:
        retrieval_ctx = build_retrieval_context(
            [_as_result(m) for m in retrieval.results],
            [m.confidence or "low" for m in retrieval.results] if retrieval.results[0].confidence else None,
            config.knowledge.retrieval.max_context_chars,
        )
    prompt = build_review_prompt(
        ReviewPromptContext(
            owner=owner,
            repo=repo,
            pr_number=0,
            pr_title=title.strip(),
            pr_body=body.strip() or None,
            pr_author=author,
            base_branch=base,
            head_branch=head,
            changed_files=changed,
            custom_instructions=review.prompt,
            mode=review.mode,
            suppressions=review.suppressions,
            min_confidence=review.min_confidence,
            diff_analysis=analysis,
            matched_path_instructions=match_path_instructions(review.path_instructions, changed),
            retrieval_context=retrieval_ctx,
            files_by_language=analysis.files_by_language,
            output_language=review.output_language,
            **preset,
        )
    )
    return LocalReview(
        owner=owner,
        repo=repo,
        base_ref=base,
        head_ref=head,
        base_sha=base_sha,
        head_sha=head_sha,
        title=title.strip(),
        changed_files=changed,
        config_warnings=warnings,
        profile=profile,
        timeout_seconds=estimate.dynamic_timeout_seconds
        if config.timeout.dynamic_scaling is not False
        else config.timeout_seconds,
        retrieval=retrieval,
        prompt=prompt,
    )


class _Record(BaseModel):
    finding_text: str
    severity: str
    category: str
    file_path: str
    outcome: str


class _Result(BaseModel):
    record: _Record
    adjusted_distance: float
    source_repo: str | None = None


def _as_result(memory: RetrievedMemory) -> _Result:
    return _Result(
        record=_Record(
            **memory.model_dump(include={"finding_text", "severity", "category", "file_path", "outcome"})
        ),
        adjusted_distance=memory.adjusted_distance,
        source_repo=memory.source_repo,
    )
