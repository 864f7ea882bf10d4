"""Delta classification of a re-review: which findings are new, still open or resolved (behaviour R2.15).

The pure function keeps the original's semantics exactly (the parity vectors pin them): keys are
``"<file_path>:<fingerprint>"`` compared as strings. The original stored prior fingerprints as bare hex and
looked them up in the ``fp-`` form, so nothing ever matched (review Q1). The port fixes that at the call
site: pass priors through :func:`with_canonical_fingerprints` and use
:func:`kodiai.text.fingerprint.fingerprint_finding_title` as ``fingerprint_fn``; both sides are then in the
one ``fp-`` form, and bare-hex rows from an older database still match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kodiai.text.fingerprint import normalize_fingerprint

DeltaStatus = Literal["new", "still-open"]


class PriorFinding(BaseModel):
    """A finding of an earlier review of the same PR, as the knowledge store returns it."""

    model_config = ConfigDict(extra="allow")

    file_path: str
    title: str
    title_fingerprint: str
    severity: str
    category: str
    start_line: int | None = None
    end_line: int | None = None
    comment_id: int | None = None


class ResolvedFinding(BaseModel):
    file_path: str
    title: str
    severity: str
    category: str


class DeltaCounts(BaseModel):
    new: int
    resolved: int
    still_open: int


class DeltaClassification(BaseModel):
    current: list[dict[str, Any]]
    resolved: list[ResolvedFinding]
    counts: DeltaCounts


def finding_key(file_path: str, fingerprint: str) -> str:
    """The match key ``"<file_path>:<fingerprint>"``."""
    return f"{file_path}:{fingerprint}"


def with_canonical_fingerprints(
    prior_findings: Iterable[PriorFinding | Mapping[str, Any]],
) -> list[PriorFinding]:
    """Priors with every ``title_fingerprint`` in the ``fp-`` form (review Q1 fix; bare hex gains ``fp-``)."""
    out = []
    for prior in prior_findings:
        p = PriorFinding.model_validate(prior)
        out.append(p.model_copy(update={"title_fingerprint": normalize_fingerprint(p.title_fingerprint)}))
    return out


def classify_finding_deltas(
    current_findings: Sequence[Mapping[str, Any]],
    prior_findings: Sequence[PriorFinding | Mapping[str, Any]],
    fingerprint_fn: Callable[[str], str],
) -> DeltaClassification:
    """Mark each current finding ``new`` or ``still-open``; unmatched prior keys are ``resolved``.

    With a repeated prior key the first position and the last value are kept (JS ``Map`` semantics).
    """
    priors: dict[str, PriorFinding] = {}
    for prior in prior_findings:
        p = PriorFinding.model_validate(prior)
        priors[finding_key(p.file_path, p.title_fingerprint)] = p
    matched: set[str] = set()
    current: list[dict[str, Any]] = []
    for finding in current_findings:
        key = finding_key(finding["file_path"], fingerprint_fn(finding["title"]))
        status: DeltaStatus = "still-open" if key in priors else "new"
        if status == "still-open":
            matched.add(key)
        current.append({**finding, "delta_status": status})
    resolved = [
        ResolvedFinding(file_path=p.file_path, title=p.title, severity=p.severity, category=p.category)
        for key, p in priors.items()
        if key not in matched
    ]
    still_open = sum(1 for f in current if f["delta_status"] == "still-open")
    counts = DeltaCounts(new=len(current) - still_open, resolved=len(resolved), still_open=still_open)
    return DeltaClassification(current=current, resolved=resolved, counts=counts)
