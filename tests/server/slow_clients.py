"""Slow clients for the slowloris test, run as their own process (``python slow_clients.py PORT N SECONDS``).

In the test process they would share its GIL with the ``/health`` probe and skew what it measures; they
run at a lower priority (nice 10), as another machine's load would not compete with the server for its
CPU. Prints one JSON line: every time the server ended a connection, ``[mode, status, lifetime_seconds]``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field

FAKE_SIGNATURE = "sha256=" + "ab" * 32  # well-formed, never valid


def status_of(response: bytes) -> int | None:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else None


@dataclass
class SlowStats:
    """What the slow clients saw each time the server ended one of their connections."""

    closures: list[tuple[str, int | None, float]] = field(default_factory=list)  # (mode, status, lifetime)
    attackers_closed: set[int] = field(default_factory=set)
    connect_errors: int = 0


async def slow_client(port: int, n: int, stop: asyncio.Event, stats: SlowStats) -> None:
    """Trickle a request one piece every 0.5 s (headers, or a signed-looking body); when the server
    ends the connection, wait 0.5 s and start again."""
    mode = "body" if n % 2 else "headers"
    loop = asyncio.get_running_loop()
    await asyncio.sleep(n * 0.01)  # ramp up over 2 s, as an attack does, rather than 200 at one instant
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            stats.connect_errors += 1
            await asyncio.sleep(0.5)
            continue
        opened = loop.time()
        ended: bytes | None = None
        try:
            if mode == "body":
                writer.write(
                    b"POST /webhooks/github HTTP/1.1\r\nHost: kodiai\r\nX-GitHub-Event: issues\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 100000\r\n"
                    b"X-Hub-Signature-256: " + FAKE_SIGNATURE.encode() + b"\r\n\r\n{"
                )
            else:
                writer.write(b"POST /webhooks/github HTTP/1.1\r\nHost: kodiai\r\n")
            while not stop.is_set():
                try:
                    data = await asyncio.wait_for(reader.read(65536), 0.5)
                except TimeoutError:
                    writer.write(b" " if mode == "body" else b"X-Slow: 1\r\n")
                    await writer.drain()
                    continue
                ended = data  # an answer (408/503) or EOF
                break
        except (ConnectionError, OSError):
            ended = b""
        finally:
            writer.close()
        if ended is not None:
            stats.closures.append((mode, status_of(ended), loop.time() - opened))
            stats.attackers_closed.add(n)
            await asyncio.sleep(0.5)


async def slowloris(port: int, clients: int, seconds: float) -> SlowStats:
    stats = SlowStats()
    stop = asyncio.Event()
    tasks = [asyncio.create_task(slow_client(port, n, stop, stats)) for n in range(clients)]
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
    return stats


def main() -> None:
    os.nice(10)
    port, clients, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    stats = asyncio.run(slowloris(port, clients, seconds))
    print(json.dumps({"closures": stats.closures, "attackers_closed": len(stats.attackers_closed)}))


if __name__ == "__main__":
    main()
