"""The price list, the token estimate and the prompt-cache accounting of a review's model requests.

Pure functions over the request bodies the Claude Code CLI sent (as the fake Anthropic API recorded them):
nothing here talks to a process or the network, so the arithmetic is unit-testable on its own.

Tokens. Anthropic does not publish the tokenizer of its current models (the count-tokens endpoint needs
the API). The estimate is **3.5 characters per token**, Anthropic's rule of thumb for English text and
the dense end for source code and JSON. Anthropic's published tokenizer for its older models (npm
``@anthropic-ai/tokenizer``, documented as only a rough approximation for Claude 3 and later) counts
3.6-4.6 characters per token on this same text (diffs 3.6, tool schemas 4.1, prose 4.0-4.6), so the
estimate is on the high side by about 15 %; ``benchmarks/cost_sizing.py`` prints that cross-check for
each run when node and the package are available.

Caching. The CLI marks ``cache_control`` breakpoints (two in the system prompt, one on the last message
block). The API caches the prefix (tools, then system, then messages) up to each breakpoint and, at each
breakpoint, finds a hit at any block boundary up to 20 blocks back. :func:`account` replays that on the
recorded requests: the longest previously written prefix is a cache read, the rest up to the last
breakpoint a cache write (5-minute TTL, the CLI's ``ephemeral`` default), the tail plain input.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The day these list prices were read from Anthropic's pricing page (USD per million tokens).
PRICE_LIST_DATE = "2026-11-28"
CHARS_PER_TOKEN = 3.5
#: The system prompt the API adds when ``tools`` are given (``tool_choice: auto``, Claude 4 models),
#: per Anthropic's tool-use pricing table; not in the request body, so added to each request here.
TOOL_USE_SYSTEM_TOKENS = 346
#: How far back (in blocks) the API looks for a cache hit from each breakpoint.
CACHE_LOOKBACK_BLOCKS = 20
#: The context window of the models below (without the 1M-context beta).
CONTEXT_WINDOW_TOKENS = 200_000


@dataclass(frozen=True)
class Price:
    """List prices of one model in USD per million tokens; ``min_cacheable`` in tokens."""

    label: str
    input: float
    output: float
    cache_write_5m: float
    cache_read: float
    min_cacheable: int


#: Every price the benchmark uses, in one place. The first entry is Kodiai's default model
#: (``DEFAULT_MODEL`` in ``src/kodiai/config/models.py``); the last prices the CLI's own side requests
#: (the session title), which it sends to its small model whatever ``model`` is configured.
PRICES: dict[str, Price] = {
    "claude-sonnet-4-5": Price("Sonnet 4.5 (default)", 3.00, 15.00, 3.75, 0.30, 1024),
    "claude-haiku-4-5": Price("Haiku 4.5", 1.00, 5.00, 1.25, 0.10, 4096),
    "claude-opus-4-5": Price("Opus 4.5", 5.00, 25.00, 6.25, 0.50, 4096),
    "claude-haiku-5-5": Price("Haiku 5.5 (CLI side requests)", 0.10, 0.50, 0.125, 0.01, 4096),
}
DEFAULT_PRICE = "claude-sonnet-4-5"
SIDE_PRICE = "claude-haiku-5-5"


def price_for(model: str) -> str:
    """The :data:`PRICES` key of a model id (``claude-sonnet-4-5-20250929`` → ``claude-sonnet-4-5``)."""
    for key in sorted(PRICES, key=len, reverse=True):
        if model == key or model.startswith(key + "-"):
            return key
    return SIDE_PRICE if "haiku" in model else DEFAULT_PRICE


def tokens_of(text: str) -> float:
    return len(text) / CHARS_PER_TOKEN


# ----------------------------------------------------------------------------- request blocks


@dataclass(frozen=True)
class Block:
    """One cacheable unit of a request (a tool definition, a system block, a message content block)."""

    key: str  # identity: the block without its cache_control marker, with its role
    text: str  # what the model reads, for the token estimate
    breakpoint: bool


def _strip(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for item in content or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "text":
            parts.append(str(item.get("text", "")))
        elif kind == "thinking":
            parts.append(str(item.get("thinking", "")))
        elif kind == "tool_use":
            parts.append(str(item.get("name", "")) + json.dumps(item.get("input", {})))
        elif kind == "tool_result":
            parts.append(_content_text(item.get("content")))
    return "\n".join(parts)


def blocks_of(body: dict[str, Any]) -> list[Block]:
    """The request in the API's cache order: tools, system, then every message's content blocks."""
    out: list[Block] = []
    for tool in body.get("tools") or []:
        out.append(
            Block(json.dumps(_strip(tool), sort_keys=True), json.dumps(_strip(tool)), "cache_control" in tool)
        )
    system = body.get("system")
    for item in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
        out.append(
            Block(
                "system" + json.dumps(_strip(item), sort_keys=True),
                _content_text([item]),
                "cache_control" in item,
            )
        )
    for message in body.get("messages") or []:
        role = str(message.get("role"))
        content = message.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for item in items:
            if isinstance(item, dict):
                key = role + json.dumps(_strip(item), sort_keys=True)
                out.append(Block(key, _content_text([item]), "cache_control" in item))
    return out


# ----------------------------------------------------------------------------- accounting


@dataclass
class RequestUsage:
    """The input of one request split as the API would bill it, and the model the CLI asked for."""

    model: str
    fresh: float  # plain input tokens
    cache_write: float
    cache_read: float

    @property
    def total(self) -> float:
        return self.fresh + self.cache_write + self.cache_read


@dataclass
class CacheState:
    """Prefixes written to the cache so far, per model (the cache is per model and organisation)."""

    written: dict[str, set[str]] = field(default_factory=dict)


def _prefix_hashes(blocks: Sequence[Block]) -> list[str]:
    digest = hashlib.sha256()
    hashes = []
    for block in blocks:
        digest.update(block.key.encode())
        digest.update(b"\x00")
        hashes.append(digest.copy().hexdigest())
    return hashes


def account_request(body: dict[str, Any], state: CacheState) -> RequestUsage:
    """Split one request's input tokens into plain, cache-write and cache-read, updating ``state``."""
    model = str(body.get("model", ""))
    blocks = blocks_of(body)
    sizes = [tokens_of(b.text) for b in blocks]
    if body.get("tools") and sizes:
        sizes[0] += TOOL_USE_SYSTEM_TOKENS
    cumulative: list[float] = []
    running = 0.0
    for size in sizes:
        running += size
        cumulative.append(running)
    hashes = _prefix_hashes(blocks)
    written = state.written.setdefault(model, set())
    breakpoints = [i for i, b in enumerate(blocks) if b.breakpoint]
    hit = -1
    for bp in breakpoints:
        for k in range(bp, max(-1, bp - CACHE_LOOKBACK_BLOCKS - 1), -1):
            if hashes[k] in written:
                hit = max(hit, k)
                break
    minimum = PRICES[price_for(model)].min_cacheable
    last_bp = breakpoints[-1] if breakpoints else -1
    read = cumulative[hit] if hit >= 0 else 0.0
    cached_upto = cumulative[last_bp] if last_bp >= 0 and cumulative[last_bp] >= minimum else read
    write = max(0.0, cached_upto - read)
    for bp in breakpoints:
        if cumulative[bp] >= minimum:
            written.add(hashes[bp])
    total = cumulative[-1] if cumulative else 0.0
    return RequestUsage(model, fresh=total - read - write, cache_write=write, cache_read=read)


def account(bodies: Iterable[dict[str, Any]], state: CacheState | None = None) -> list[RequestUsage]:
    """Every request of a session, in order, against one cache (cold unless ``state`` is given)."""
    state = state or CacheState()
    return [account_request(body, state) for body in bodies]


# ----------------------------------------------------------------------------- dollars


@dataclass(frozen=True)
class Totals:
    fresh: float
    cache_write: float
    cache_read: float
    output: float
    requests: int
    largest_request: float

    @property
    def input(self) -> float:
        return self.fresh + self.cache_write + self.cache_read


def totals(usages: Sequence[RequestUsage], output_tokens: float) -> Totals:
    return Totals(
        fresh=sum(u.fresh for u in usages),
        cache_write=sum(u.cache_write for u in usages),
        cache_read=sum(u.cache_read for u in usages),
        output=output_tokens,
        requests=len(usages),
        largest_request=max((u.total for u in usages), default=0.0),
    )


def dollars(t: Totals, price: Price, *, cached: bool = True) -> float:
    """The cost at ``price``; ``cached=False``: every input token at the plain input price."""
    if not cached:
        return (t.input * price.input + t.output * price.output) / 1e6
    return (
        t.fresh * price.input
        + t.cache_write * price.cache_write_5m
        + t.cache_read * price.cache_read
        + t.output * price.output
    ) / 1e6


def side_dollars(usages: Sequence[RequestUsage]) -> float:
    """The CLI's side requests (no breakpoints: plain input) at their own model's price; no output
    figure is known for them, so 100 output tokens each (a session title) are assumed."""
    cost = 0.0
    for u in usages:
        price = PRICES[price_for(u.model)]
        cost += (
            u.fresh * price.input + u.cache_write * price.cache_write_5m + u.cache_read * price.cache_read
        ) / 1e6
        cost += 100 * price.output / 1e6
    return cost
