"""Write mode's trusted building blocks (``apply:`` / ``change:`` mentions).

- ``policy``: which staged changes may be committed (deny/allow globs, secret scan), pure;
- ``staged``: reading ``git diff --cached`` from a workspace, enforcing the policy, commit-and-push;
- ``messages``: the write-output key and branch, commit message, bot PR title/body, refusal reply,
  the branch-conflict error classifier.

The persisted in-flight keys, rate limits and conversation turn counts live in
:mod:`kodiai.jobs.mention_state`.
"""
