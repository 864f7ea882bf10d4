"""The SDK's subprocess transport, closing the CLI's stdout pipe itself.

The SDK's ``close()`` terminates the CLI and forgets its stdout stream without closing it; asyncio closes
the pipe only once it reads its end. Inside the agent sandbox the CLI is bubblewrap's grandchild, so
after bubblewrap is stopped the pipe stays open for a moment (until the kernel kills the sandboxed
process); the forgotten transport is then left to garbage collection, which warns ("unclosed transport")
and keeps a file descriptor per run. Closing it explicitly ends both.
"""

from __future__ import annotations

from contextlib import suppress

from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport


class ClosingCLITransport(SubprocessCLITransport):
    """:class:`SubprocessCLITransport` whose ``close()`` also closes the child's pipes.

    anyio's stream ``aclose()`` only marks its reader closed, so the asyncio subprocess transport under
    anyio's process (``Process._process._transport``; neither library offers a public close) is closed
    once the SDK has reaped the child."""

    async def close(self) -> None:
        process = self._process
        await super().close()
        asyncio_process = getattr(process, "_process", None)
        transport = getattr(asyncio_process, "_transport", None)
        if transport is not None:
            with suppress(Exception):
                transport.close()
