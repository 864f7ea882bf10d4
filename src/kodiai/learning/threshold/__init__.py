"""The adaptive threshold: how the reranked memory pool is cut down to what the review prompt sees.

- :mod:`.types` — the shapes every cut shares (context, decision, strategy protocol, candidate);
- :mod:`.pool` — the chain's pool as candidates, with recency multipliers;
- :mod:`.max_gap` — the original's max-gap threshold (``maxgap``);
- :mod:`.head_gap` — the relative cut (``headgap``) and its previous version (``headgap-v1``);
- :mod:`.baselines` — the evaluation's fixed and top-k cuts, and the replay of any pure cut;
- :mod:`.same_pr` — the re-review scope (the PR's own earlier memories);
- :mod:`.profiles` — which cut, with which constants, for each embedding model.

Imports run one way: ``types`` ← ``pool`` / ``max_gap`` ← ``head_gap`` ← ``baselines`` / ``same_pr`` /
``profiles``; nothing here imports the chain (:mod:`kodiai.learning.pipeline`).
"""
