"""What a mention asks for (behaviour E3.5 gates, E3.6 write intent), all pure.

The config gates answer with a named skip reason (the handler logs it and stops silently, no reply).
Write intent is read from the question after the mention is stripped; the write output key and the
bot branch derived from it make a repeated ``apply:`` land on the same branch and PR.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kodiai.compat.js import js_trim, js_trim_start
from kodiai.config.models import MentionConfig

from .surface import CLAUDE_HANDLE, MentionSurface, strip_mention

WriteKeyword = Literal["apply", "change", "plan"]
_KEYWORDS: tuple[WriteKeyword, ...] = ("apply", "change", "plan")

ConfigSkip = Literal["mentions-disabled", "user-not-allowlisted", "handle-not-accepted", "empty-question"]

#: The log line of each config gate (E3.5); the handler logs it and returns without a reply.
CONFIG_SKIP_MESSAGES: dict[ConfigSkip, str] = {
    "mentions-disabled": "Mentions disabled in config, skipping",
    "user-not-allowlisted": "Mention author not in allowedUsers; skipping",
    "handle-not-accepted": "Mention does not match accepted handles for repo; skipping",
    "empty-question": "Mention contained no question after stripping mention; skipping",
}


def accepted_handles(app_slug: str, accept_claude_alias: bool = True) -> tuple[str, ...]:
    """``[slug, "claude"]``, or only the slug when ``mention.acceptClaudeAlias`` is false."""
    return (app_slug, CLAUDE_HANDLE) if accept_claude_alias else (app_slug,)


def bot_handles(app_slug: str) -> tuple[str, ...]:
    """Handles defused in everything the bot posts, whatever the alias setting: ``[slug, "claude"]``."""
    return (app_slug, CLAUDE_HANDLE)


def matches_accepted_handles(body: str, handles: tuple[str, ...]) -> bool:
    """Gate 3: a plain substring test of ``@<handle>`` on the lowercased body (E3.21.1: ``@kodiaibot`` passes)."""
    text = body.lower()
    return any(f"@{handle.lower()}" in text for handle in handles)


class MentionGateResult(BaseModel):
    """The first failing config gate, or the question to answer (the body with the mentions stripped)."""

    model_config = ConfigDict(frozen=True)

    skip: ConfigSkip | None = None
    question: str = ""
    handles: tuple[str, ...] = ()


def apply_config_gates(surface: MentionSurface, config: MentionConfig, app_slug: str) -> MentionGateResult:
    """E3.5 gates 1–4 in order: enabled, allowedUsers (case-insensitive), accepted handle, non-empty question."""
    handles = accepted_handles(app_slug, config.accept_claude_alias is not False)
    if not config.enabled:
        return MentionGateResult(skip="mentions-disabled", handles=handles)
    allowed = {user.lower() for user in config.allowed_users}
    if allowed and surface.author.lower() not in allowed:
        return MentionGateResult(skip="user-not-allowlisted", handles=handles)
    if not matches_accepted_handles(surface.body, handles):
        return MentionGateResult(skip="handle-not-accepted", handles=handles)
    question = strip_mention(surface.body, handles)
    if not question:
        return MentionGateResult(skip="empty-question", handles=handles)
    return MentionGateResult(question=question, handles=handles)


class WriteIntent(BaseModel):
    """``apply:`` / ``change:`` / ``plan:`` prefix of the question; ``request`` is what the model is asked."""

    model_config = ConfigDict(frozen=True)

    keyword: WriteKeyword | None = None
    request: str

    @property
    def is_write_intent(self) -> bool:
        return self.keyword is not None

    @property
    def is_plan_only(self) -> bool:
        return self.keyword == "plan"


def parse_write_intent(question: str) -> WriteIntent:
    """Left-trim; a lowercase ``apply:``, ``change:`` or ``plan:`` prefix (no space before the colon) wins.

    With a keyword the request is the text after the colon, trimmed; otherwise the whole question, trimmed.
    """
    text = js_trim_start(question)
    lowered = text.lower()
    for keyword in _KEYWORDS:
        prefix = f"{keyword}:"
        if lowered.startswith(prefix):
            return WriteIntent(keyword=keyword, request=js_trim(text[len(prefix) :]))
    return WriteIntent(request=js_trim(text))


def is_write_enabled(intent: WriteIntent, write_config_enabled: bool) -> bool:
    """Write mode runs only for ``apply:``/``change:`` with ``write.enabled``; ``plan:`` never writes."""
    return intent.is_write_intent and not intent.is_plan_only and bool(write_config_enabled)


def _norm(value: str) -> str:
    return js_trim(value).lower()


def build_write_output_key(
    *, installation_id: int, owner: str, repo: str, pr_number: int, comment_id: int, keyword: str
) -> str:
    """``kodiai-write-output:v1:inst-<id>:<owner>/<repo>:pr-<n>:comment-<id>:keyword-<kw>`` (owner, repo,
    keyword trimmed and lowercased): one key per triggering comment, stamped into the commit message."""
    return (
        f"kodiai-write-output:v1:inst-{installation_id}:{_norm(owner)}/{_norm(repo)}"
        f":pr-{pr_number}:comment-{comment_id}:keyword-{_norm(keyword)}"
    )


def build_write_branch_name(*, pr_number: int, comment_id: int, write_output_key: str) -> str:
    """``kodiai/apply/pr-<n>-comment-<id>-<first 12 hex of sha256(key)>``: deterministic, so a retry finds
    the PR it already opened."""
    digest = hashlib.sha256(write_output_key.encode("utf-8")).hexdigest()[:12]
    return f"kodiai/apply/pr-{pr_number}-comment-{comment_id}-{digest}"


def trigger_comment_url(surface: MentionSurface) -> str:
    """Logs only: ``https://github.com/<o>/<r>/pull/<n>#issuecomment-<id>`` (``/issues/<n>`` off a PR)."""
    path = f"pull/{surface.pr_number}" if surface.pr_number is not None else f"issues/{surface.issue_number}"
    return f"https://github.com/{surface.owner}/{surface.repo}/{path}#issuecomment-{surface.comment_id}"


def source_pr_url(owner: str, repo: str, pr_number: int) -> str:
    """``https://github.com/<o>/<r>/pull/<n>``: named in the "Updated PR" / "Already applied" replies."""
    return f"https://github.com/{owner}/{repo}/pull/{pr_number}"


def conversation_key(surface: MentionSurface) -> str:
    """Turn-limit key ``<owner>/<repo>#<n>``: per PR (or issue), not per thread (E3.7, E3.21.11)."""
    number = surface.pr_number if surface.pr_number is not None else surface.issue_number
    return f"{surface.owner}/{surface.repo}#{number}"


def write_rate_limit_key(installation_id: int, owner: str, repo: str) -> str:
    """Rate-limit key ``<installationId>:<owner>/<repo>`` of ``write.minIntervalSeconds`` (E3.6 gate 3)."""
    return f"{installation_id}:{owner}/{repo}"
