"""The facts of one pull request a review needs, whatever it came from (a webhook or a local branch).

Both paths build a :class:`PullRequestFacts` first, so the gather and plan stages cannot tell a webhook
review from ``kodiai review`` on a checkout: what they see is the same model.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class PullRequestFacts(BaseModel):
    """Identity, refs and description of the PR under review (behaviour R1 steps 2, 6, 15, 33)."""

    model_config = ConfigDict(frozen=True)

    owner: str
    repo: str
    number: int
    title: str
    body: str | None = None
    author: str
    author_association: str = "NONE"
    base_ref: str
    base_sha: str
    head_ref: str
    head_sha: str
    labels: tuple[str, ...] = ()
    additions: int | float = 0
    deletions: int | float = 0
    commit_count: int | None = None
    """``pull_request.commits``; None when the payload had none (the original then failed intent parsing)."""

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"

    @property
    def payload_lines_changed(self) -> int | float:
        """``max(0, additions + deletions)`` from the payload: what picks the auto profile (step 33)."""
        return max(0, self.additions + self.deletions)
