"""Incremental-review dedup: prior findings on unchanged code are not re-posted (behaviour R2.14).

Keys are ``"<file_path>:<title_fingerprint>"`` compared as strings, exactly as in the original (the parity
vectors pin this). For the review Q1 fix, build the context from
:func:`kodiai.review.delta.with_canonical_fingerprints` priors and look up with
:func:`kodiai.text.fingerprint.fingerprint_finding_title`, so both sides use the ``fp-`` form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from kodiai.review.delta import PriorFinding, finding_key


class PriorFindingContext(BaseModel):
    """Prior findings on files unchanged since the last review, and their suppression keys."""

    unresolved_on_unchanged_code: list[PriorFinding]
    suppression_fingerprints: set[str]


def build_prior_finding_context(
    prior_findings: Sequence[PriorFinding | Mapping[str, Any]],
    changed_files_since_last_review: Iterable[str],
) -> PriorFindingContext:
    """Drop priors on changed files; keep the others and their ``"<path>:<fingerprint>"`` keys."""
    changed = set(changed_files_since_last_review)
    unresolved: list[PriorFinding] = []
    keys: set[str] = set()
    for prior in prior_findings:
        p = PriorFinding.model_validate(prior)
        if p.file_path in changed:
            continue
        unresolved.append(p)
        keys.add(finding_key(p.file_path, p.title_fingerprint))
    return PriorFindingContext(unresolved_on_unchanged_code=unresolved, suppression_fingerprints=keys)


def should_suppress_finding(
    file_path: str, title_fingerprint: str, suppression_fingerprints: set[str]
) -> bool:
    """Set membership of ``"<file_path>:<title_fingerprint>"``."""
    return finding_key(file_path, title_fingerprint) in suppression_fingerprints
