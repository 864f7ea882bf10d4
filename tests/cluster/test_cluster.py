"""The cluster through real processes: 2 ``kodiai serve --role web`` + 2 ``--role worker`` replicas on one
PostgreSQL and one S3 bucket (moto), the fake GitHub and the fake model (the real Claude Code CLI; each
model call answered after 0.5–1.5 s).

100 signed deliveries across 5 installations (review triggers, plain comments, replayed bodies under new
delivery ids), each sent to one web replica and again to the other; one web replica is killed (``kill -9``)
mid-burst, and what it had not acknowledged is resent to the other replica, as GitHub's redelivery would;
one worker is killed mid-job and stays down (the other worker must retry its job). Then: every acknowledged
delivery is ``done`` in ``delivery_journal`` (a replayed body never ran); each GitHub effect happened once,
from the first trigger of its head; per installation the jobs never overlapped and ran in delivery order
(the journal's times, and the fake model's own clock); every finding has its memory in the learned memory
on S3, memory ids are unique; one ``retrieval_quality`` row per review's retrieval.

Cost: about 60 CPU-seconds (4 replica starts and one restart, 15 reviews through the CLI, 85 cheap jobs;
every behaviour above holds per installation, so more installations only add CPU);
the worker settings below keep its waits short (a worker declared dead after 5 s); the poll is the
default: an installation's next job starts when its lock is released, not at the next poll.
"""

from __future__ import annotations

import itertools
import resource
import threading
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from cluster.cluster_stack import (
    FINDING_TITLE,
    Cluster,
    Sender,
    build_tenants,
    delivery_of,
    duplicates,
    head_of,
    journal,
    markers,
    rows,
    wait_until,
    with_replays,
    worker_is_mid_job,
)
from support.s3 import S3Bucket

pytestmark = pytest.mark.slow

TENANTS = 5
REPLAY_EVERY = 4  # per installation: 16 deliveries (cluster_stack.PATTERN: 3 reviews) + 4 replayed bodies
THINK = (0.5, 1.5)  # seconds per model call: long enough for overlapping calls to show
WEBS, WORKERS = ("web1", "web2"), ("worker1", "worker2")


def memory_rows(bucket: S3Bucket) -> list[dict[str, Any]]:
    """The learned memory's rows, read with LanceDB straight from the bucket (not through Kodiai)."""
    import lancedb

    env = bucket.server.env()
    options = {
        "aws_endpoint": env["AWS_ENDPOINT_URL"],
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "aws_region": env["AWS_REGION"],
        "allow_http": "true",
    }
    db = lancedb.connect(bucket.uri("memory"), storage_options=options)
    tables = db.list_tables().tables
    assert tables, f"no memory table in {bucket.uri('memory')}: {bucket.object_keys()[:20]}"
    found: list[dict[str, Any]] = []
    for name in tables:
        found += db.open_table(name).to_arrow().select(["id", "repo", "finding_id"]).to_pylist()
    return found


def test_two_web_and_two_worker_replicas_survive_kills_with_every_effect_once(
    tmp_path: Path, empty_postgres_url: str, s3_bucket: S3Bucket
) -> None:
    started = time.monotonic()
    used = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = sum(u.ru_utime + u.ru_stime for u in used)
    phases: dict[str, float] = {}
    url = empty_postgres_url
    env = {
        "DATABASE_URL": url,
        "LEARNING_MEMORY_URI": s3_bucket.uri("memory"),
        **s3_bucket.server.env(),
        "WORKER_CONCURRENCY": str(TENANTS),  # every installation's lane at once on the surviving worker
        "REVIEW_CONCURRENCY": "6",
        "WORKER_HEARTBEAT_SECONDS": "1",
        "WORKER_STALLED_SECONDS": "5",  # the killed worker's job is retried after 5 s, not 30
        "SHUTDOWN_GRACE_SECONDS": "2",
    }
    cluster = Cluster(tmp_path, env, think=THINK)
    try:
        tenants = build_tenants(cluster.fake, cluster.state, tmp_path / "git", TENANTS)
        streams = [with_replays(t.deliveries, REPLAY_EVERY) for t in tenants]
        total = sum(len(s) for s in streams)
        assert total == 20 * TENANTS, total
        for name in WEBS:
            cluster.process(name, "web")
        for name in WORKERS:
            cluster.process(name, "worker")
        cluster.start([*WEBS, *WORKERS])
        phases["replicas up"] = time.monotonic() - started

        sender = Sender([cluster.procs[n] for n in WEBS])
        burst = threading.Event()

        def progress(acknowledged: int) -> None:
            if acknowledged >= total // 3:
                burst.set()

        sending = threading.Thread(target=sender.send_all, args=(streams, progress), daemon=True)
        sending.start()

        # kill -9 of a web replica mid-burst (a third of the deliveries sent), restarted as a supervisor would
        assert burst.wait(120), "the burst did not get a third of the way"
        cluster.kill("web1")
        phases["web killed"] = time.monotonic() - started
        restart_web = threading.Thread(target=cluster.procs["web1"].start, daemon=True)
        restart_web.start()

        # kill -9 of a worker while it runs a review (its Claude Code CLI is a child of it)
        wait_until(lambda: worker_is_mid_job(cluster.procs["worker1"]), 120, "worker1 running a job", 0.05)
        worker_killed_at = time.time()
        cluster.kill("worker1")  # not restarted: worker2 must find and retry its job
        phases["worker killed"] = time.monotonic() - started

        sending.join(240)
        assert not sending.is_alive(), "the sender did not finish"
        restart_web.join(60)
        sender.close()
        phases["all acknowledged"] = time.monotonic() - started
        posts = sorted(sender.post_seconds)
        phases["post p50"], phases["post max"] = posts[len(posts) // 2], posts[-1]

        outcomes = sender.outcomes
        assert len(outcomes) == total
        assert [o.delivery.id for o in outcomes if not o.acked] == []
        resent = [o for o in outcomes if len(o.statuses) > 2 or not isinstance(o.statuses[0], int)]
        assert resent, "no delivery met the killed web replica"
        originals = {o.delivery.id: o.delivery for o in outcomes if o.delivery.replay_of is None}
        replays = [o.delivery for o in outcomes if o.delivery.replay_of is not None]

        def all_done() -> bool:
            found = journal(url)
            return all(found.get(d, (0, 0, ""))[2] == "done" for d in originals)

        wait_until(all_done, 240, "every acknowledged delivery done in delivery_journal", 1.0)
        phases["all done"] = time.monotonic() - started

        # 1. every acknowledged delivery ended done; a replayed body was acknowledged and never journalled
        found = journal(url)
        assert {d: r[2] for d, r in found.items() if d in originals and r[2] != "done"} == {}
        assert [d.id for d in replays if d.id in found] == []
        assert set(found) == set(originals)
        assert max(r[3] for r in found.values()) >= 2, "no job was retried after the worker's kill"

        # 2. each GitHub effect once: one output per reviewed head, from one delivery, nothing twice
        writes = cluster.bot_writes()
        unmarked = [(k, repo, n, body[:200]) for k, repo, n, body in writes if not list(markers(body))]
        assert unmarked == [], "the app wrote something that is not a review output (an error comment?)"
        effects = [
            (kind, repo, n, marker, head_of(key))
            for kind, repo, n, body in writes
            for marker, key in markers(body)
        ]
        assert duplicates(effects) == {}
        keys_per_head: dict[tuple[str, int, str], set[str]] = defaultdict(set)
        for _kind, repo, n, body in writes:
            for _marker, key in markers(body):
                keys_per_head[(repo, n, head_of(key))].add(delivery_of(key))
        assert {h: k for h, k in keys_per_head.items() if len(k) != 1} == {}
        first_trigger: dict[tuple[str, int, str], str] = {}
        for stream in streams:
            for d in stream:
                if d.head is not None and d.replay_of is None:
                    first_trigger.setdefault((d.repo, d.pr, d.head), d.id)
        heads = set(first_trigger)
        assert {h: next(iter(k)) for h, k in keys_per_head.items()} == first_trigger  # in delivery order
        inline = [(repo, n) for kind, repo, n, _b in writes if kind == "inline"]
        assert sorted(inline) == sorted((t.full_name, 1) for t in tenants)
        approvals = [
            (repo, n, head_of(key))
            for kind, repo, n, b in writes
            if kind == "review:APPROVE"
            for _m, key in markers(b)
        ]
        assert sorted(approvals) == sorted(h for h in heads if h[1] != 1)  # every clean head approved once

        # 3. per installation, jobs never overlapped and ran in delivery order (journal seq = ack order)
        by_installation: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
        for record in found.values():
            by_installation[record[1]].append(record)
        for installation, records in by_installation.items():
            records.sort(key=lambda r: r[0])
            for before, after in itertools.pairwise(records):
                assert datetime.fromisoformat(after[4]) >= datetime.fromisoformat(before[5]), (
                    f"installation {installation}: job seq {after[0]} started before seq {before[0]} finished"
                )
        # ...and by the fake model's clock (calls in flight when the worker died are left out)
        calls: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for call in cluster.log.calls:
            if call.end and not call.start <= worker_killed_at <= call.end:
                calls[call.repo].append((call.start, call.end))
        for repo, spans in calls.items():
            spans.sort()
            overlaps = [(a, b) for a, b in itertools.pairwise(spans) if b[0] < a[1]]
            assert overlaps == [], f"{repo}: two model calls of one installation at once"

        # 4. learned memory on S3: unique ids, every finding's memory present (a memory names its finding by
        # the finding's comment id)
        findings = rows(
            url,
            "SELECT r.repo, f.comment_id FROM findings f JOIN reviews r ON r.id = f.review_id WHERE f.title = %s",
            (FINDING_TITLE,),
        )
        assert sorted(r[0] for r in findings) == sorted(t.full_name for t in tenants)
        memories = memory_rows(s3_bucket)
        assert duplicates(m["id"] for m in memories) == {}
        assert {(str(r), int(f)) for r, f in findings} <= {(m["repo"], m["finding_id"]) for m in memories}

        # 5. one telemetry row per retrieval: one per reviewed head's delivery, none for the others
        retrievals = rows(url, "SELECT delivery_id FROM retrieval_quality")
        reviewed = {next(iter(k)) for k in keys_per_head.values()}
        assert sorted(str(r[0]) for r in retrievals) == sorted(reviewed)
    finally:
        cluster.close()
        timeline = {k: round(v, 1) for k, v in phases.items()}
        used = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = sum(u.ru_utime + u.ru_stime for u in used) - cpu_before
        print(f"\ncluster timeline (s): {timeline}; CPU-s of the test and its processes: {cpu:.0f}")
