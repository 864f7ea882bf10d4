"""Map the SDK's final ``result`` message to an :class:`ExecutionResult` (spec/exec.md §1.5), pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claude_agent_sdk import ResultMessage

from kodiai.execution.types import ExecutionResult
from kodiai.text.js import js_number_to_string

NO_RESULT_MESSAGE = "No result message received from Claude Code CLI"


def _usage_total(model_usage: Mapping[str, Mapping[str, Any]], key: str) -> int:
    return sum(int(usage.get(key) or 0) for usage in model_usage.values())


def map_result(result: ResultMessage, *, published: bool, wall_clock_ms: int) -> ExecutionResult:
    """Conclusion from the subtype (``is_error`` is ignored), tokens summed over every model.

    ``model`` is the first key of the per-model usage map (insertion order), ``unknown`` when empty;
    ``duration_ms`` falls back to the wall clock only when the result has none (JS ``??``: 0 is kept).
    """
    model_usage: Mapping[str, Mapping[str, Any]] = result.model_usage or {}
    return ExecutionResult(
        conclusion="success" if result.subtype == "success" else "failure",
        published=published,
        cost_usd=result.total_cost_usd,
        num_turns=result.num_turns,
        duration_ms=result.duration_ms if result.duration_ms is not None else wall_clock_ms,
        session_id=result.session_id,
        stop_reason=result.stop_reason,
        model=next(iter(model_usage), "unknown"),
        input_tokens=_usage_total(model_usage, "inputTokens"),
        output_tokens=_usage_total(model_usage, "outputTokens"),
        cache_read_tokens=_usage_total(model_usage, "cacheReadInputTokens"),
        cache_creation_tokens=_usage_total(model_usage, "cacheCreationInputTokens"),
    )


def timeout_message(seconds: float) -> str:
    return (
        f"Job timed out after {js_number_to_string(seconds)} seconds. "
        "The operation was taking too long and was automatically terminated."
    )


def timeout_result(seconds: float, *, published: bool) -> ExecutionResult:
    """Timeout: ``published`` reports what the tools really posted (PARITY.md, review Q4)."""
    return ExecutionResult(
        conclusion="error", is_timeout=True, published=published, error_message=timeout_message(seconds)
    )


def error_result(message: str) -> ExecutionResult:
    return ExecutionResult(conclusion="error", published=False, error_message=message)
