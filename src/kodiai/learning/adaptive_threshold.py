"""The pinned import path of the original's max-gap threshold (see docs/parity.md); the code lives in
:mod:`kodiai.learning.threshold.max_gap`."""

from kodiai.learning.threshold.max_gap import DEFAULT_ADAPTIVE_CONFIG, compute_adaptive_threshold
from kodiai.learning.threshold.types import AdaptiveThresholdConfig, AdaptiveThresholdResult

__all__ = [
    "DEFAULT_ADAPTIVE_CONFIG",
    "AdaptiveThresholdConfig",
    "AdaptiveThresholdResult",
    "compute_adaptive_threshold",
]
