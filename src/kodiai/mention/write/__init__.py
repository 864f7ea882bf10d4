"""Write mode's trusted building blocks (``apply:`` / ``change:`` mentions).

- ``policy``: which staged changes may be committed (deny/allow globs, secret scan), pure;
- ``staged``: reading ``git diff --cached`` from a workspace, enforcing the policy, commit-and-push;
- ``messages``: commit message and idempotency marker, bot PR title/body, the branch-conflict error
  classifier, and ``policy_refusal`` (a policy error as the R15 reply of
  :mod:`kodiai.mention.replies` takes it).

The write-output key and bot branch name are built in :mod:`kodiai.mention.intent`.

The persisted in-flight keys, rate limits and conversation turn counts live in
:mod:`kodiai.mention.state`.
"""
