"""Where the knowledge database lives: ``--db`` argument > ``KNOWLEDGE_DB_PATH`` > the default (P1.1, P8.4)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

DEFAULT_KNOWLEDGE_DB_PATH = "./data/kodiai-knowledge.db"
DEFAULT_TELEMETRY_DB_PATH = "./data/kodiai-telemetry.db"

KnowledgePathSource = Literal["arg", "env", "default"]


def resolve_knowledge_db_path(
    arg: str | None, env: Mapping[str, str], cwd: str | Path | None = None
) -> tuple[str, KnowledgePathSource]:
    """The absolute knowledge DB path and which source won. Values are trimmed; blank counts as unset."""
    base = Path(cwd).absolute() if cwd is not None else Path.cwd()
    chosen: tuple[str, KnowledgePathSource]
    if arg is not None and arg.strip():
        chosen = (arg.strip(), "arg")
    elif env.get("KNOWLEDGE_DB_PATH", "").strip():
        chosen = (env["KNOWLEDGE_DB_PATH"].strip(), "env")
    else:
        chosen = (DEFAULT_KNOWLEDGE_DB_PATH, "default")
    return os.path.normpath(base / chosen[0]), chosen[1]
