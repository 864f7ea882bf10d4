"""Who may make write mode change the repository, and where it may push (a port addition), all pure.

The original ran ``apply:``/``change:`` for anyone who could comment and pushed wherever the PR head was
(a fork's content went to a bot branch in the base repository). Here:

- the commenter needs write access (GitHub's collaborator permission, fail-closed);
- a fork PR is refused unless the base branch's ``.kodiai.yml`` sets ``write.allowForks: true``, and even
  then the change comes back as a patch in a reply: nothing from a fork is ever pushed;
- a same-repository head that is the default branch or a protected branch is never pushed to directly:
  the change goes to a bot branch and a bot PR against that head instead.
"""

from __future__ import annotations

from typing import Literal

from kodiai.mention.replies import REPLY_SUMMARY
from kodiai.text.formatting import wrap_in_details

#: GitHub refuses comments longer than 65 536 characters; the patch leaves room for the text around it.
MAX_PATCH_CHARS = 60_000

#: Why a same-repository head is not pushed to directly.
DirectPushBlock = Literal["default-branch", "protected", "unverified"]

_BLOCK_WORDS: dict[DirectPushBlock, str] = {
    "default-branch": "is the repository's default branch",
    "protected": "is a protected branch",
    "unverified": "could not be checked for branch protection",
}


def _wrapped(*lines: str) -> str:
    return wrap_in_details("\n".join(lines), REPLY_SUMMARY)


def write_permission_refused_reply(author: str) -> str:
    """The commenter has no write access: write mode does not run."""
    return _wrapped(
        f"Sorry @{author}, `apply:` and `change:` need write access to this repository, and you don't have it. "
        "Nothing was changed.",
        "",
        "Use `plan:` to get a plan instead, or ask someone with write access to request the change.",
    )


def write_permission_unknown_reply() -> str:
    """The permission lookup failed: fail closed."""
    return _wrapped(
        "I couldn't verify your permission on this repository, so I did not make any change.",
        "",
        "Please try again in a moment.",
    )


def fork_write_refused_reply() -> str:
    """A fork PR without ``write.allowForks`` on the base branch."""
    return _wrapped(
        "This pull request comes from a fork, so I don't make changes to it: write mode never pushes to a "
        "fork nor brings a fork's content into this repository. Nothing was changed.",
        "",
        "Maintainers can set `write.allowForks: true` in `.kodiai.yml` on the base branch to get such "
        "changes as a patch in a reply instead.",
    )


def _fence(text: str) -> str:
    """A backtick fence longer than any backtick run inside ``text`` (so the patch cannot close it)."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def fork_patch_reply(patch: str) -> str:
    """The change on a fork PR (``write.allowForks``) as a unified diff; nothing was pushed."""
    if len(patch) > MAX_PATCH_CHARS:
        return _wrapped(
            "This pull request comes from a fork, so I don't push changes; I would reply with a patch, but "
            f"it is {len(patch)} characters long, over the {MAX_PATCH_CHARS} a comment can hold. "
            "Nothing was changed.",
            "",
            "Try a narrower request (which file, and what exact change).",
        )
    fence = _fence(patch)
    return _wrapped(
        "This pull request comes from a fork, so I don't push changes. Here is the change as a patch "
        "(apply it with `git apply`):",
        "",
        f"{fence}diff",
        patch.rstrip("\n"),
        fence,
    )


def bot_pr_instead_reply(pr_url: str, head_ref: str, block: DirectPushBlock) -> str:
    """R4 for a head that is not pushed to directly: the bot PR targets the head branch."""
    return _wrapped(
        f"Opened PR: {pr_url}",
        "",
        f"The pull request's branch `{head_ref}` {_BLOCK_WORDS[block]}, so I did not push to it directly; "
        "merge the PR above to take the change.",
    )
