"""The fallback prompt used when the caller supplies none (behaviour E1.9), pure."""

from __future__ import annotations

from kodiai.execution.types import ExecutionContext
from kodiai.text.sanitizer import sanitize_content


def build_generic_prompt(context: ExecutionContext) -> str:
    lines = [
        f"You are reviewing a GitHub repository. Event: {context.event_type}",
        f"Repository: {context.owner}/{context.repo}",
    ]
    if context.pr_number is not None:
        lines.append(f"Pull Request: #{context.pr_number}")
    lines += [
        "",
        "User message:",
        "",
        sanitize_content(context.trigger_body),
        "",
        "Analyze the code in the workspace and post your findings using the available GitHub MCP tools.",
    ]
    return "\n".join(lines)
