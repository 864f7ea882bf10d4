"""The four repository settings the executor reads, loaded from the workspace's ``.kodiai.yml``.

The executor loads the config a second time (behaviour E1.3 step 2, quirk E1.11.1): a YAML error
fails the run through the generic error path, a section-level problem is logged and defaulted.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from kodiai.config import DEFAULT_MODEL, RepoConfig, load_repo_config
from kodiai.config.loader import log_section_warnings
from kodiai.log import Logger


class ExecutorConfig(BaseModel):
    """``model``, ``maxTurns``, ``timeoutSeconds`` and ``systemPromptAppend`` of ``RepoConfig``."""

    model: str = DEFAULT_MODEL
    max_turns: int = 25
    timeout_seconds: float = 600
    system_prompt_append: str | None = None

    @classmethod
    def from_repo_config(cls, config: RepoConfig) -> ExecutorConfig:
        # The schema keeps JS numbers (floats); the CLI flag wants an integer turn count.
        return cls(
            model=config.model,
            max_turns=int(config.max_turns),
            timeout_seconds=config.timeout_seconds,
            system_prompt_append=config.system_prompt_append,
        )


def load_executor_config(workspace_dir: Path, log: Logger) -> ExecutorConfig:
    """Load ``.kodiai.yml`` (defaults when absent); ``RepoConfigError`` propagates on bad YAML."""
    result = load_repo_config(workspace_dir)
    log_section_warnings(result, log)
    return ExecutorConfig.from_repo_config(result.config)
