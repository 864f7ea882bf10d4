"""Webhook ingress benchmark: deliveries/s and ack latency (p50/p99) of the real Kodiai app vs a bare endpoint.

Both servers run as separate processes under the same uvicorn configuration; this process is the load
generator (N keep-alive connections, each posting back to back, with a lean asyncio HTTP/1.1 client). Payloads are a real
``pull_request.opened`` fixture (≈24 KB; padded if it were under 20 KB), HMAC-signed, each with its own body (a number in the PR body) and delivery id, and
installations spread over 20 lanes. Kodiai runs its full pipeline: signature, JSON check and routing
fields, SQLite dedup + journal write before the 200, router, per-installation lanes; its job reads the
payload (parsed on that first read, as any real handler's would be) and appends the delivery id to a file. After each run the server is stopped with SIGTERM (graceful drain) and the file is
checked: every acknowledged delivery ran exactly once (zero lost, zero duplicated).

Columns: ``cpu ms/req`` is the server process's CPU (user + system, all threads) per request;
``client cpu`` is this load generator's own CPU per request (on a small machine it shares the cores, so
it bounds both servers' throughput); the last line per run is the closed loop's latency floor.

    .venv/bin/python benchmarks/webhook.py                 # 50 and 200 clients, 3000 requests each
    .venv/bin/python benchmarks/webhook.py --requests 6000 --concurrency 50 200
    .venv/bin/python benchmarks/webhook.py --rate 200 400 --open-seconds 10   # open loop at fixed rates
    .venv/bin/python benchmarks/webhook.py --fresh-connections   # a new connection per delivery
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT.parent / "shared" / "fixtures" / "webhooks" / "pull_request.opened.payload.json"
SECRET = "bench-webhook-secret"
TARGET_BYTES = 20 * 1024


# ----------------------------------------------------------------------------- servers (child processes)
async def _bare_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The ceiling of the stack: read the body, answer 200 {"received": true}."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"17")],
        }
    )
    await send({"type": "http.response.body", "body": b'{"received":true}'})


# The same uvicorn configuration for both servers, the one `kodiai serve` uses: the asyncio loop (see
# serve_cmd for why not uvloop) + its h11 protocol with the HTTP limits. `--parser httptools` runs the
# former parser instead, for comparison (it has no header limit: issue 15).
UVICORN = {
    "host": "127.0.0.1",
    "log_level": "error",
    "access_log": False,
    "loop": "asyncio",
}


def uvicorn_config() -> dict[str, Any]:
    if os.environ.get("KODIAI_BENCH_PARSER") == "httptools":
        return {**UVICORN, "http": "httptools"}
    from kodiai.server.http_limits import HttpOptions, uvicorn_options

    return {**UVICORN, **uvicorn_options(HttpOptions())}


def serve_bare(port: int) -> None:
    import uvicorn

    uvicorn.run(_bare_app, port=port, **uvicorn_config())


def serve_kodiai(port: int, workdir: Path, log_level: str = "warn") -> None:
    import uvicorn

    sys.path.insert(0, str(ROOT / "tests"))
    from kodiai.github.app_auth import GitHubApp
    from kodiai.jobs.lanes import JobContext
    from kodiai.log import configure_logging
    from kodiai.server.app import create_app
    from kodiai.server.runtime import Runtime, ServerConfig, build_runtime
    from kodiai.webhook.events import WebhookEvent
    from support.fake_github import FakeGitHub

    # JSON lines as in production; the runbook lines are info, so `--log-level info` adds their rendering
    configure_logging(log_level, json=True)
    fake = FakeGitHub().start()
    record = (workdir / "ran.txt").open("a", buffering=1)

    def register(runtime: Runtime) -> None:
        async def handler(event: WebhookEvent) -> None:
            async def job() -> None:
                if event.payload.get("action") == "opened":  # a real handler reads the payload
                    record.write(event.id + "\n")

            await runtime.queue.enqueue(
                event.installation_id, job, JobContext(delivery_id=event.id, job_type="bench")
            )

        runtime.router.register("pull_request.opened", handler, name="bench")

    config = ServerConfig(
        app_id=str(fake.app_id),
        webhook_secret=SECRET,
        github_api_url=fake.url,
        jobs_db_path=str(workdir / "jobs.db"),
        workspace_root=str(workdir / "ws"),
        max_lane_length=100_000,
        port=port,
    )
    github = GitHubApp(fake.app_id, fake.private_key_pem, base_url=fake.url)
    app = create_app(build_runtime(config, github=github, register_handlers=register))
    try:
        uvicorn.run(app, port=port, **uvicorn_config())
    finally:
        record.close()
        fake.stop()


# ----------------------------------------------------------------------------- load generator
def payload() -> bytes:
    """The real fixture, re-serialised compactly as GitHub sends it (≈24 KB), padded if ever below 20 KB."""
    data = json.loads(FIXTURE.read_bytes())
    data["installation"] = {"id": 1}
    size = len(json.dumps(data).encode())
    if size < TARGET_BYTES:
        data["pull_request"]["body"] = (data["pull_request"].get("body") or "") + "x" * (TARGET_BYTES - size)
    return json.dumps(data).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(mode: str, port: int, workdir: Path, log_level: str = "warn") -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve",
            mode,
            "--port",
            str(port),
            "--workdir",
            str(workdir),
            "--log-level",
            log_level,
        ],
        stdout=subprocess.DEVNULL,
        stderr=(workdir / f"{mode}.log").open("wb"),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{mode} server did not start; see {workdir / (mode + '.log')}")


async def _post(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: bytes, body: bytes) -> int:
    """One keep-alive HTTP/1.1 POST on an open connection; returns the status code."""
    writer.write(head + body)
    await writer.drain()
    status_line = await reader.readline()
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length:
        await reader.readexactly(length)
    return int(status_line.split()[1])


async def load(
    port: int,
    bodies: list[bytes],
    requests: int,
    concurrency: int,
    rate: float | None = None,
    fresh: bool = False,
) -> dict[str, Any]:
    """``concurrency`` keep-alive connections posting back to back (a lean asyncio client: httpx's own
    overhead would dominate the measurement on a small machine). With ``fresh``, every request opens its
    own connection instead (``Connection: close``; the latency includes the connect), as a sender that
    does not keep connections alive would.

    With ``rate`` (deliveries/s) the load is open-loop instead: request ``i`` is due at ``i / rate``
    seconds, on connection ``i % concurrency``, and its latency is counted from when it was due (so a
    server that falls behind is charged for the queueing, not only for the service time)."""
    import hashlib
    import hmac

    # Every request a distinct body (signed before the clock starts); the run number keeps bodies of
    # successive runs against one server apart too.
    run_id = uuid.uuid4().int % 10**6
    payloads = [unique_body(bodies[i % len(bodies)], run_id * 10**8 + i) for i in range(requests)]
    signatures = ["sha256=" + hmac.new(SECRET.encode(), b, hashlib.sha256).hexdigest() for b in payloads]
    ids = [f"bench-{uuid.uuid4()}" for _ in range(requests)]
    latencies: list[float] = []
    acked: list[str] = []
    errors = 0
    next_index = 0
    close_header = "Connection: close\r\n" if fresh else ""

    async def worker(slot: int) -> None:
        nonlocal next_index, errors
        reader, writer = (None, None) if fresh else await asyncio.open_connection("127.0.0.1", port)
        try:
            while next_index < requests if rate is None else slot < requests:
                if rate is None:
                    i = next_index
                    next_index += 1
                else:
                    i, slot = slot, slot + concurrency
                    await asyncio.sleep(max(0.0, started + i / rate - time.perf_counter()))
                body = payloads[i]
                head = (
                    "POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    f"X-GitHub-Event: pull_request\r\nX-GitHub-Delivery: {ids[i]}\r\n"
                    f"X-Hub-Signature-256: {signatures[i]}\r\nUser-Agent: GitHub-Hookshot/bench\r\n"
                    f"Content-Length: {len(body)}\r\n{close_header}\r\n"
                ).encode()
                t0 = time.perf_counter() if rate is None else max(started + i / rate, 0.0)
                try:
                    if fresh:
                        reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    assert reader is not None and writer is not None
                    status = await _post(reader, writer, head, body)
                    if fresh:
                        writer.close()
                except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                    errors += 1
                    if writer is not None:
                        writer.close()
                    reader, writer = (
                        (None, None) if fresh else await asyncio.open_connection("127.0.0.1", port)
                    )
                    continue
                latencies.append(time.perf_counter() - t0)
                if status == 200:
                    acked.append(ids[i])
                else:
                    errors += 1
        finally:
            if writer is not None:
                writer.close()

    started = time.perf_counter()
    client_cpu = time.process_time()
    await asyncio.gather(*(worker(slot) for slot in range(concurrency)))
    elapsed = time.perf_counter() - started
    client_cpu = time.process_time() - client_cpu
    latencies.sort()
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000,
        "errors": errors,
        "client_cpu_ms": client_cpu / max(1, len(latencies)) * 1000,
        "acked": acked,
    }


def server_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of the server process (Linux /proc), to show the cost per delivery."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


NONCE = b"bench-nonce-0000000000000000"
"""A fixed-width marker in the PR body that each request replaces with its own number: the server
deduplicates replays of an identical signed body, so a benchmark that resent one body would be measuring
the replay guard (and its deliveries would never run)."""


def with_installations(body: bytes, lanes: int = 20) -> list[bytes]:
    """One body template per installation lane (ids 1..lanes); the load generator cycles through them."""
    data = json.loads(body)
    data["pull_request"]["body"] = (data["pull_request"].get("body") or "") + NONCE.decode()
    out = []
    for i in range(1, lanes + 1):
        data["installation"] = {"id": i}
        out.append(json.dumps(data).encode())
    return out


def unique_body(template: bytes, i: int) -> bytes:
    """The template with its marker replaced by request ``i``'s number (same length)."""
    return template.replace(NONCE, f"bench-nonce-{i:016d}".encode(), 1)


def run(args: argparse.Namespace) -> int:
    bodies = with_installations(payload())
    print(
        f"payload: {len(bodies[0])} bytes (real pull_request.opened, signed), {len(bodies)} installation lanes, "
        f"{args.requests} requests per run"
    )
    print(
        f"{'server':<8} {'clients':>7} {'deliv/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6} {'cpu ms/req':>10} {'client cpu':>10}  jobs check"
    )
    failures = 0
    open_loop: list[tuple[str, int, float, dict[str, Any]]] = []
    for concurrency in args.concurrency:
        results = {}
        for mode in ("bare", "kodiai"):
            workdir = Path(tempfile.mkdtemp(prefix=f"bench-{mode}-"))
            port = free_port()
            proc = start(mode, port, workdir, args.log_level)
            try:
                asyncio.run(
                    load(port, bodies, min(200, args.requests), concurrency, fresh=args.fresh)
                )  # warm-up
                cpu_before = server_cpu_seconds(proc.pid)
                result = asyncio.run(load(port, bodies, args.requests, concurrency, fresh=args.fresh))
                cpu_after = server_cpu_seconds(proc.pid)
                result["cpu_ms"] = (
                    (cpu_after - cpu_before) / args.requests * 1000
                    if cpu_before is not None and cpu_after is not None
                    else float("nan")
                )
                for rate in args.rate:
                    count = max(1, int(rate * args.open_seconds))
                    opened = asyncio.run(load(port, bodies, count, concurrency, rate=rate, fresh=args.fresh))
                    result["acked"] += opened["acked"]
                    open_loop.append((mode, concurrency, rate, opened))
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=120)
            check = ""
            if mode == "kodiai":
                ran = Counter((workdir / "ran.txt").read_text().split())
                acked = set(result["acked"])
                lost = len(acked - set(ran))
                duplicated = sum(1 for n in ran.values() if n > 1)
                check = f"lost={lost} duplicated={duplicated} (acked {len(acked)}, ran {sum(ran.values())} incl. warm-up)"
                if lost or duplicated:
                    failures += 1
            results[mode] = result
            print(
                f"{mode:<8} {concurrency:>7} {result['rps']:>9.0f} {result['p50_ms']:>8.1f} "
                f"{result['p99_ms']:>8.1f} {result['errors']:>6} {result['cpu_ms']:>10.3f} {result['client_cpu_ms']:>10.3f}  {check}"
            )
        ratio = results["kodiai"]["rps"] / results["bare"]["rps"]
        print(f"{'':<8} {concurrency:>7} kodiai/bare throughput = {ratio:.0%}")
        # A closed loop keeps `concurrency` requests in flight, so the mean latency is concurrency / throughput
        # (Little's law): a p99 target below that floor needs more throughput, not a shorter path.
        floors = ", ".join(f"{m} {concurrency / results[m]['rps'] * 1000:.1f} ms" for m in ("bare", "kodiai"))
        print(f"{'':<8} {concurrency:>7} mean-latency floor (clients / deliv/s): {floors}")
    if open_loop:
        print(
            f"\nopen loop: deliveries due at a fixed rate over {args.open_seconds:g} s, latency counted from when each was due"
        )
        print(
            f"{'server':<8} {'clients':>7} {'offered/s':>9} {'done/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}"
        )
        for mode, concurrency, rate, r in open_loop:
            print(
                f"{mode:<8} {concurrency:>7} {rate:>9.0f} {r['rps']:>8.0f} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['errors']:>6}"
            )
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[50, 200])
    parser.add_argument(
        "--rate",
        type=float,
        nargs="*",
        default=[200.0],
        help="also run open-loop at these offered deliveries/s on the same connections (none: skip)",
    )
    parser.add_argument("--open-seconds", type=float, default=10.0)
    parser.add_argument(
        "--fresh-connections",
        dest="fresh",
        action="store_true",
        help="a new connection per request (Connection: close) instead of keep-alive connections",
    )
    parser.add_argument(
        "--log-level",
        default="warn",
        help="Kodiai's LOG_LEVEL (info renders every runbook line; stderr to a file)",
    )
    parser.add_argument(
        "--parser",
        choices=["kodiai", "httptools"],
        default="kodiai",
        help="kodiai: the h11 protocol and limits kodiai serve runs (default); httptools: the former parser",
    )
    parser.add_argument("--serve", choices=["bare", "kodiai"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is None:
        os.environ["KODIAI_BENCH_PARSER"] = args.parser  # the server processes inherit it
    if args.serve == "bare":
        serve_bare(args.port)
        return 0
    if args.serve == "kodiai":
        serve_kodiai(args.port, args.workdir, args.log_level)
        return 0
    return run(args)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())
