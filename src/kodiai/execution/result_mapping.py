"""Map the SDK's final ``result`` message to an :class:`ExecutionResult` (behaviour E1.5), pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kodiai.compat.js import js_number_to_string
from kodiai.execution.types import ExecutionResult

if TYPE_CHECKING:
    from claude_agent_sdk import ResultMessage

NO_RESULT_MESSAGE = "No result message received from Claude Code CLI"
EMPTY_RESULT_MESSAGE = "The model returned an empty result (no output tokens, nothing published)"


def _usage_total(model_usage: Mapping[str, Mapping[str, Any]], key: str) -> int:
    return sum(int(usage.get(key) or 0) for usage in model_usage.values())


def _failed_call(result: ResultMessage, output_tokens: int, published: bool) -> str | None:
    """Why a ``success``-subtype result is not a review: the CLI reports a failed model call (an API
    error, an unreachable endpoint) as ``is_error`` with the error text, and a call that produced nothing
    at all has no output tokens. The original recorded both as ``success`` (issue #12 fixes that)."""
    if result.is_error:
        return (result.result or "").strip() or "Claude Code reported an error without a message"
    if not published and output_tokens == 0 and not (result.result or "").strip():
        return EMPTY_RESULT_MESSAGE
    return None


def map_result(result: ResultMessage, *, published: bool, wall_clock_ms: int) -> ExecutionResult:
    """Conclusion from the subtype, tokens summed over every model.

    ``success`` needs the ``success`` subtype *and* a model call that worked: ``is_error`` or an empty
    run is ``error`` with the CLI's message (so the handler posts the classified error comment);
    any other subtype is ``failure``. ``model`` is the first key of the per-model usage map (insertion
    order), ``unknown`` when empty; ``duration_ms`` falls back to the wall clock only when the result has
    none (JS ``??``: 0 is kept).
    """
    model_usage: Mapping[str, Mapping[str, Any]] = result.model_usage or {}
    output_tokens = _usage_total(model_usage, "outputTokens")
    failure = _failed_call(result, output_tokens, published) if result.subtype == "success" else None
    return ExecutionResult(
        conclusion=("error" if failure else "success") if result.subtype == "success" else "failure",
        error_message=failure,
        published=published,
        cost_usd=result.total_cost_usd,
        num_turns=result.num_turns,
        duration_ms=result.duration_ms if result.duration_ms is not None else wall_clock_ms,
        session_id=result.session_id,
        stop_reason=result.stop_reason,
        model=next(iter(model_usage), "unknown"),
        input_tokens=_usage_total(model_usage, "inputTokens"),
        output_tokens=output_tokens,
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
