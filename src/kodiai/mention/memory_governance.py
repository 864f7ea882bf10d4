"""``@kodiai forget`` and ``@kodiai remember: <text>`` (issue 14, a port addition): a maintainer governs the
learned memory from GitHub. Runs inside the mention job after its config gates, instead of the model.

Permission is checked through the API (write access or above) and fails closed: when GitHub cannot tell,
nothing changes. Every change is recorded in the knowledge DB's ``memory_governance`` table with who asked,
when and from which comment, and acknowledged in the thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from kodiai.github.permissions import PermissionLookupError, lookup_permission
from kodiai.github.rest import RestApi
from kodiai.handler_kit.deps import HandlerDeps, LearnedMemory
from kodiai.learning.provenance import comment_url
from kodiai.learning.setup import finding_memory_text
from kodiai.learning.types import LearningMemoryRecord
from kodiai.log import Logger
from kodiai.mention.memory_commands import (
    REMEMBER_MAX_CHARS,
    MemoryCommand,
    already_forgotten_reply,
    forget_outside_thread_reply,
    forgotten_reply,
    is_maintainer,
    no_memory_reply,
    not_a_finding_reply,
    permission_unknown_reply,
    refused_reply,
    remember_needs_pr_reply,
    remember_too_long_reply,
    remember_usage_reply,
    remembered_reply,
)
from kodiai.mention.surface import MentionSurface
from kodiai.storage.knowledge_models import MemoryGovernanceRecord

#: What a hand-added memory looks like to retrieval and the prompt: a repo-wide team note.
REMEMBER_SEVERITY = "medium"
REMEMBER_CATEGORY = "team-note"
REMEMBER_PATH = "(repository-wide)"

Reply = Callable[[str], Awaitable[Any]]


class MemoryGovernance:
    """One governance command; :meth:`run` returns the job outcome (``memory:<result>``)."""

    def __init__(self, deps: HandlerDeps, rest: RestApi, surface: MentionSurface, reply: Reply, log: Logger):
        self.deps = deps
        self.rest = rest
        self.surface = surface
        self.reply = reply
        self.log = log

    async def run(self, command: MemoryCommand) -> str:
        s = self.surface
        if command.action == "forget" and (not s.is_inline or s.in_reply_to_id is None):
            return await self._end(command, "not-in-thread", forget_outside_thread_reply())
        if command.action == "remember" and s.pr_number is None:
            return await self._end(command, "no-pr", remember_needs_pr_reply())
        if command.action == "remember" and not command.text:
            return await self._end(command, "empty", remember_usage_reply())
        if len(command.text) > REMEMBER_MAX_CHARS:
            return await self._end(command, "too-long", remember_too_long_reply(len(command.text)))
        memory, knowledge = self.deps.memory, self.deps.knowledge
        if memory is None and (command.action == "remember" or knowledge is None):
            return await self._end(command, "no-memory", no_memory_reply(command.action))
        try:
            permission = await lookup_permission(self.rest, s.owner, s.repo, s.author)
        except PermissionLookupError as exc:  # fail closed: an unverified request changes nothing
            self.log.warning(
                "Permission check failed; memory unchanged", gate="memory-governance", err=str(exc)
            )
            return await self._end(command, "permission-unknown", permission_unknown_reply(command.action))
        if not is_maintainer(permission):
            return await self._end(
                command, "refused", refused_reply(command.action, s.author), permission=permission
            )
        if command.action == "forget":
            return await self._forget()
        assert memory is not None
        return await self._remember(memory, command.text)

    async def _forget(self) -> str:
        s, knowledge, memory = self.surface, self.deps.knowledge, self.deps.memory
        repo, root = s.full_name, int(s.in_reply_to_id or 0)
        command = MemoryCommand(action="forget")
        if knowledge is not None:
            earlier = await asyncio.to_thread(knowledge.list_memory_governance, repo)
            done = next(
                (g for g in earlier if g.action == "forget" and g.finding_id == root and g.restored_at is None),
                None,
            )
            if done is not None:
                reply = already_forgotten_reply(done.actor, done.created_at or "an earlier time")
                return await self._end(command, "already-forgotten", reply)
        finding = (
            await asyncio.to_thread(knowledge.get_finding_by_comment_id, repo, root) if knowledge else None
        )
        removed = await asyncio.to_thread(memory.store.retire, repo, root) if memory is not None else 0
        if finding is None and removed == 0:
            return await self._end(command, "not-a-finding", not_a_finding_reply())
        if knowledge is not None:
            await asyncio.to_thread(
                knowledge.record_memory_governance,
                MemoryGovernanceRecord(
                    repo=repo,
                    action="forget",
                    actor=s.author,
                    finding_id=root,
                    removed=removed,
                    pr_number=s.pr_number,
                    comment_id=s.comment_id,
                    comment_url=self._comment_url(),
                    text=finding.title if finding is not None else None,
                ),
            )
        return await self._end(
            command, "forgotten", forgotten_reply(repo, s.author, removed), removed=removed
        )

    async def _remember(self, memory: LearnedMemory, text: str) -> str:
        s, knowledge = self.surface, self.deps.knowledge
        command = MemoryCommand(action="remember", text=text)
        embedder = memory.embeddings
        vector = await asyncio.to_thread(
            embedder.generate,
            finding_memory_text(REMEMBER_SEVERITY, REMEMBER_CATEGORY, text, REMEMBER_PATH),
            "document",
        )
        if vector is None:
            raise RuntimeError("the embedding provider returned no vector for the note")
        record = LearningMemoryRecord(
            repo=s.full_name,
            owner=s.owner,
            finding_id=None,
            review_id=None,
            source_repo=s.full_name,
            finding_text=text,
            severity=REMEMBER_SEVERITY,
            category=REMEMBER_CATEGORY,
            file_path=REMEMBER_PATH,
            outcome="accepted",
            embedding_model=embedder.model,
            embedding_dim=embedder.dimensions,
        )
        memory_id = await asyncio.to_thread(memory.store.write_memory, record, vector)
        if memory_id is None:
            raise RuntimeError("the memory store skipped the note")
        if knowledge is not None:
            await asyncio.to_thread(
                knowledge.record_memory_governance,
                MemoryGovernanceRecord(
                    repo=s.full_name,
                    action="remember",
                    actor=s.author,
                    memory_id=memory_id,
                    pr_number=s.pr_number,
                    comment_id=s.comment_id,
                    comment_url=self._comment_url(),
                    text=text,
                ),
            )
        reply = remembered_reply(s.full_name, s.author, text, memory_id)
        return await self._end(command, "remembered", reply, memoryId=memory_id)

    def _comment_url(self) -> str | None:
        """The command comment's URL, built as provenance builds every comment URL."""
        s = self.surface
        if s.pr_number is None:
            return None
        kind = (
            None
            if s.is_inline
            else "pull_request_review"
            if s.surface == "pr_review_body"
            else "issue_comment"
        )
        return comment_url(s.full_name, s.pr_number, s.comment_id, kind)

    async def _end(self, command: MemoryCommand, result: str, reply: str, **fields: Any) -> str:
        self.log.info(
            "Memory governance command",
            gate="memory-governance",
            command=command.action,
            result=result,
            actor=self.surface.author,
            **fields,
        )
        await self.reply(reply)
        return f"memory:{result}"
