"""Which `.kodiai.yml` governs a run, and how to say so (pure).

A pull request's head is written by its author. When that author may not push to the repository (a
fork, or no write permission, or GitHub could not tell), the head's `.kodiai.yml` must not decide how the
PR is reviewed (`systemPromptAppend`, `maxTurns`, `skipPaths`, `write.*`, `mention.allowedUsers`...): the
base branch's file does. A same-repository PR by a writer keeps the original's behaviour (the head's
file), and issue mentions read the default branch as before.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from kodiai.github.permissions import AccessLevel

ConfigTree = Literal["head", "base", "default-branch"]
#: Why the base branch was chosen (None when it was not).
BaseReason = Literal["fork", "author-read", "author-unknown"]

_REASONS: dict[BaseReason, str] = {
    "fork": "pull request from a fork",
    "author-read": "the pull request's author has no write access",
    "author-unknown": "the pull request author's write access could not be verified",
}


class ConfigSource(BaseModel):
    """Where the run's configuration came from: the tree, whether the file existed there, and why."""

    model_config = ConfigDict(frozen=True)

    tree: ConfigTree
    found: bool = True
    ref: str | None = None
    reason: BaseReason | None = None

    @property
    def author_trusted(self) -> bool:
        """False for a PR whose author may not push (a fork, no write access, or unverified): the bot's
        verdict on such a PR is a comment review, never an approval that could count toward required
        reviews (the PR's own text may have talked the model into "no issues")."""
        return self.reason is None

    @property
    def label(self) -> str:
        """A short machine-friendly name for logs: ``head``, ``base``, ``default-branch`` or ``defaults``."""
        return self.tree if self.found else "defaults"

    def describe(self) -> str:
        """One human sentence for the review details, e.g. "`.kodiai.yml` from the base branch `main`
        (pull request from a fork)"."""
        if self.tree == "head":
            where = "the pull request head"
        elif self.tree == "base":
            where = f"the base branch `{self.ref}`" if self.ref else "the base branch"
        else:
            where = f"the default branch `{self.ref}`" if self.ref else "the default branch"
        why = f"; {_REASONS[self.reason]}" if self.reason is not None else ""
        if not self.found:
            return f"defaults (no `.kodiai.yml` on {where}{why})"
        return f"`.kodiai.yml` from {where}" + (f" ({_REASONS[self.reason]})" if self.reason else "")


def choose_pull_request_tree(
    *, is_fork: bool, author_access: AccessLevel
) -> tuple[ConfigTree, BaseReason | None]:
    """``head`` only for a same-repository PR whose author has write access; otherwise ``base`` and why.

    ``author_access`` is ignored for a fork (no lookup is needed: a fork never governs itself)."""
    if is_fork:
        return "base", "fork"
    if author_access == "write":
        return "head", None
    return "base", "author-read" if author_access == "read" else "author-unknown"
