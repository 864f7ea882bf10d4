"""Helpers of ``benchmarks/cost_sizing.py``: the PR corpus, the price list and token accounting, the
scripted review the fake model plays, and the process-tree sampler."""
