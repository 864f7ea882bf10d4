"""Suite-wide fixtures. Area-specific fixtures live in their own conftest or tests/support module."""

from __future__ import annotations

import os

# Embeddings load from the installed package only; never reach for a model hub in tests.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
