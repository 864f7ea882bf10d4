"""The second stage: a learned ranker over the first stage's pool (pure; no I/O).

The first stage (vector + lexical channels, language rerank, recency, the cut) scores each memory on its
own. The second stage looks at the *pair* (this PR, this memory): both channels' scores normalised within
the pool, whether the memory's file is one the PR changes / sits in a directory it changes / shares path
segments with it, language, age and the team's feedback tally. A logistic regression over those features
(:class:`RankerModel`, a :class:`kodiai.learning.logistic.LogisticModel`, weights shipped as JSON in the package, trained leave-one-repository-out by
``kodiai eval stages``) gives each candidate a probability of being relevant; the stage keeps those at or
above the model's threshold, the most probable first, at most ``top_k``.

Skip rules (:func:`skip_reason`) say when the first stage's answer stands instead. They are measured, not
assumed: the evaluation reports how often each fires, the lift when the ranker is used and what skipping
cost, and a test fails when a rule fires on every or on no pool of a realistic set.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from kodiai.learning.logistic import LogisticModel

#: The pair features, in the model's column order.
FEATURES: tuple[str, ...] = (
    "vector",  # vector similarity normalised within the pool (best 1, worst 0)
    "lexical",  # BM25 / the pool's best BM25 (0 without a match)
    "vector_head",  # 1 / (1 + rank by vector distance)
    "distance",  # the adjusted distance itself (absolute evidence; 0..2.3)
    "same_file",  # the memory's file is one the PR changes
    "same_dir",  # … or sits in a directory the PR changes
    "path_overlap",  # the largest share of path segments shared with a changed file (Jaccard)
    "same_stem",  # the file's stem equals a changed file's stem (foo.go ~ foo_test.go's stem foo)
    "language",  # 1 same language, 0.5 unknown, 0 other
    "age",  # recency multiplier − 1 (0 new … 0.85 old)
    "feedback",  # the team's net reactions, clipped to −1 … 1 (0 without any)
)
SkipRule = Literal["no-file-evidence"]
SKIP_RULES: tuple[SkipRule, ...] = ("no-file-evidence",)


@dataclass(frozen=True, slots=True)
class PairInput:
    """One pool member as the second stage sees it (``distance`` on the adjusted scale, ``multiplier`` the
    recency multiplier, ``lexical`` its BM25 score, ``language_match`` None when the language is unknown,
    ``feedback`` the net 👍 − 👎 of its finding)."""

    distance: float
    multiplier: float
    lexical: float
    file_path: str
    language_match: bool | None = None
    feedback: int = 0


def _segments(path: str) -> set[str]:
    return {s for s in path.lower().replace("\\", "/").split("/") if s}


def _stem(path: str) -> str:
    base = posixpath.basename(path.lower())
    stem = base.split(".", 1)[0]
    for suffix in ("_test", "_spec", "test", "spec"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)].rstrip("_-.")
            break
    return stem


@dataclass(frozen=True, slots=True)
class PrFiles:
    """The PR's changed files, pre-digested once per query."""

    files: frozenset[str]
    dirs: frozenset[str]
    segments: tuple[frozenset[str], ...]
    stems: frozenset[str]

    @classmethod
    def of(cls, paths: Sequence[str]) -> PrFiles:
        clean = [p.strip().lower() for p in paths if p.strip()]
        return cls(
            files=frozenset(clean),
            dirs=frozenset(posixpath.dirname(p) for p in clean),
            segments=tuple(frozenset(_segments(p)) for p in clean),
            stems=frozenset(s for s in (_stem(p) for p in clean) if s),
        )


def file_evidence(path: str, pr: PrFiles) -> tuple[float, float, float, float]:
    """``(same_file, same_dir, path_overlap, same_stem)`` of one memory's file against the PR's files."""
    p = path.strip().lower()
    if not p or not pr.files:
        return 0.0, 0.0, 0.0, 0.0
    segs = _segments(p)
    overlap = max((len(segs & s) / len(segs | s) for s in pr.segments if segs | s), default=0.0)
    return (
        float(p in pr.files),
        float(posixpath.dirname(p) in pr.dirs),
        overlap,
        float(_stem(p) in pr.stems),
    )


def pair_features(pool: Sequence[PairInput], pr_files: Sequence[str] | PrFiles) -> np.ndarray:
    """The ``len(pool) × len(FEATURES)`` feature matrix (every channel normalised within the pool, so
    the model reads the pool's own spread like ``headgap`` does, plus the absolute distance)."""
    pr = pr_files if isinstance(pr_files, PrFiles) else PrFiles.of(pr_files)
    n = len(pool)
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return out
    d = np.array([c.distance for c in pool], dtype=np.float64)
    lo, hi = float(d.min()), float(d.max())
    vector = (hi - d) / (hi - lo) if hi - lo > 1e-12 else np.ones(n)
    best_lexical = max(c.lexical for c in pool)
    order = np.argsort(d, kind="stable")
    rank = np.empty(n, dtype=np.float64)
    rank[order] = np.arange(n)
    for i, c in enumerate(pool):
        same_file, same_dir, overlap, stem = file_evidence(c.file_path, pr)
        out[i] = (
            vector[i],
            c.lexical / best_lexical if best_lexical > 0 else 0.0,
            1.0 / (1.0 + rank[i]),
            c.distance,
            same_file,
            same_dir,
            overlap,
            stem,
            0.5 if c.language_match is None else float(c.language_match),
            c.multiplier - 1.0,
            max(-1.0, min(1.0, float(c.feedback))),
        )
    return out


class RankerModel(LogisticModel):
    """The ranker: a logistic regression over :data:`FEATURES`; a candidate is kept at ``p ≥ threshold``."""

    features: tuple[str, ...] = FEATURES

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """P(relevant) per row of ``features``."""
        if features.shape[0] == 0:
            return np.zeros(0)
        if tuple(self.features) != FEATURES:
            raise ValueError("the ranker model was trained on other features; retrain it")
        return self.predict(features)


def skip_reason(pool: Sequence[PairInput], pr: PrFiles) -> SkipRule | None:
    """Why the first stage's answer stands for this (non-empty) pool, or None to run the ranker.

    ``no-file-evidence``: no candidate shares a file, a directory or a file stem with the PR (or the PR
    lists no files, e.g. ``kodiai memory search``). The file features, which carry the ranker's lift,
    are then all zero: the ranker would only re-weigh the two channels the first stage already fused
    (measured: without file features it adds nothing over ``headgap``), so the cut's answer stands and
    the abstain stage, when on, decides whether to keep it.
    """
    if not pr.files or not any(any(file_evidence(c.file_path, pr)[i] for i in (0, 1, 3)) for c in pool):
        return "no-file-evidence"
    return None


@dataclass(frozen=True)
class StageDecision:
    """What the ranker kept (pool indices, most probable first), each candidate's probability, and the
    status written to telemetry (``used`` or ``skipped:<rule>``)."""

    kept: list[int]
    probabilities: list[float]
    status: str


def rank_pool(
    pool: Sequence[PairInput], pr_files: Sequence[str] | PrFiles, model: RankerModel, top_k: int
) -> StageDecision:
    """Run the skip rules, then the ranker: the ``top_k`` candidates with ``p ≥ threshold``, most probable
    first (ties keep the pool's order). A skipped or empty pool keeps nothing here (status
    ``skipped:<rule>`` / ``empty``): the caller keeps the first stage's answer."""
    pr = pr_files if isinstance(pr_files, PrFiles) else PrFiles.of(pr_files)
    if not pool:
        return StageDecision(kept=[], probabilities=[], status="empty")
    reason = skip_reason(pool, pr)
    if reason is not None:
        return StageDecision(kept=[], probabilities=[], status=f"skipped:{reason}")
    p = model.probabilities(pair_features(pool, pr))
    order = sorted(range(len(pool)), key=lambda i: (-p[i], i))
    kept = [i for i in order if p[i] >= model.threshold - 1e-12][:top_k]
    return StageDecision(kept=kept, probabilities=[float(v) for v in p], status="used")


def language_match(file_path: str, pr_languages: Sequence[str]) -> bool | None:
    """True when the memory's file is in one of the PR's languages, False for another known language,
    None when its language is unknown (the language rerank's own classification)."""
    from kodiai.text.languages import UNKNOWN_LANGUAGE, classify_file_language

    language = classify_file_language(file_path)
    if language == UNKNOWN_LANGUAGE:
        return None
    return language in set(pr_languages)
