"""The logistic regression both learned stages use (pure; numpy only): the fitted parameters as a model
that ships as JSON, and a deterministic fit, so the abstain model and the ranker differ only in their
columns and their thresholds."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class LogisticModel(BaseModel):
    """Standardisation (``mean`` / ``scale``), ``weights`` and ``bias`` of a logistic regression, the
    probability ``threshold`` its stage decides at, and what it was fitted on."""

    model_config = ConfigDict(frozen=True)

    mean: list[float]
    scale: list[float]
    weights: list[float]
    bias: float
    threshold: float = Field(ge=0, le=1)
    trained_on: str = ""
    """What the weights were fitted on (data set, queries, pairs, the command)."""

    def standardised(self, x: np.ndarray) -> np.ndarray:
        return (x - np.asarray(self.mean)) / np.asarray(self.scale)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """P(positive) per row of ``x`` (or of one row): logits clipped to ±40, so never exactly 0 or 1."""
        logits = self.standardised(x) @ np.asarray(self.weights) + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(logits, -40, 40)))


def fit_logistic(
    x: np.ndarray, y: np.ndarray, *, l2: float = 1.0, iterations: int = 50
) -> tuple[list[float], list[float], list[float], float]:
    """``(mean, scale, weights, bias)`` of an L2-regularised logistic regression, by Newton's method
    (deterministic: the same data always gives the same weights)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((x.shape[0], 1))])
    w = np.zeros(z.shape[1])
    reg = np.eye(z.shape[1]) * l2
    reg[-1, -1] = 0.0  # the bias is not shrunk
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -40, 40)))
        grad = z.T @ (p - y) + reg @ w
        hess = (z * (p * (1 - p))[:, None]).T @ z + reg + np.eye(z.shape[1]) * 1e-9
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return mean.tolist(), scale.tolist(), w[:-1].tolist(), float(w[-1])
