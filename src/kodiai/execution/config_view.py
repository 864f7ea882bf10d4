"""The four repository settings the executor reads, loaded from the workspace's ``.kodiai.yml``.

The executor loads the config a second time (spec/exec.md §1.3 step 2, quirk §1.11.1): a YAML error
fails the run through the generic error path, a section-level problem is logged and defaulted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

DEFAULT_MODEL = "claude-sonnet-4-5-20250929"
CONFIG_FILE = ".kodiai.yml"


class ExecutorConfig(BaseModel):
    """``model``, ``maxTurns``, ``timeoutSeconds`` and ``systemPromptAppend`` of ``RepoConfig``."""

    model: str = DEFAULT_MODEL
    max_turns: int = 25
    timeout_seconds: float = 600
    system_prompt_append: str | None = None

    @classmethod
    def from_repo_config(cls, config: Any) -> ExecutorConfig:
        defaults = cls()
        return cls(
            model=getattr(config, "model", None) or defaults.model,
            max_turns=getattr(config, "max_turns", None) or defaults.max_turns,
            timeout_seconds=getattr(config, "timeout_seconds", None) or defaults.timeout_seconds,
            system_prompt_append=getattr(config, "system_prompt_append", None),
        )


def load_executor_config(workspace_dir: Path, log: Any) -> ExecutorConfig:
    """Parse ``.kodiai.yml`` with :func:`kodiai.config.parse_repo_config`; defaults when absent."""
    from kodiai.config import parse_repo_config  # the config package owns parsing and its errors

    path = workspace_dir / CONFIG_FILE
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    parsed = parse_repo_config(text)
    for warning in getattr(parsed, "warnings", []) or []:
        log.warning(
            "Config section invalid, using defaults",
            section=getattr(warning, "section", None),
            issues=getattr(warning, "issues", None),
        )
    return ExecutorConfig.from_repo_config(parsed.config)
