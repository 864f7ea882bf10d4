"""Dependency-bump PRs, in one place: detection and classification (``detect``), changelog and advisory
enrichment (``enrichment``, fetched by ``enrichment_fetch``), merge confidence (``merge_confidence``), the
review job's stage (``review_stage``) and the merge history kept when a bump PR closes (``history``). The
prompt's ``## Dependency Bump Context`` section is with the other prompt sections
(:mod:`kodiai.review.prompt.dep_bump`): it is built from the prompt's view models, and the prompt builder
imports it."""
