"""Dependency-bump PRs, in one place: detection and classification (``detect``), changelog and advisory
enrichment (``enrichment``, fetched by ``enrichment_fetch``), merge confidence (``merge_confidence``), the
review's prompt section (``prompt``), the review job's stage (``review_stage``) and the merge history kept
when a bump PR closes (``history``)."""
