"""Feedback sync (behaviour R1 step 55): human 👍/👎 on finding comments into the knowledge store
and the learned memory. Gates and the job in :mod:`.sync`, the pure filter in :mod:`.reactions`, the
memory outcome rows in :mod:`.memory_outcomes`; whose word counts (writers only) and the held-back findings of
untrusted authors in :mod:`.trust` and :mod:`.closed` (issue 23)."""
