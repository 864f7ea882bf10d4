"""The order in which ``make test`` (``pytest -n 2 --dist loadfile``) hands test files to its two workers.

xdist gives a worker the next file whenever it is almost out of work. When a long file is handed out last,
one worker runs it alone while the other waits: the suite's wall time is the busier worker's. So the files
that take longest go first, longest first, and the thousands of short tests come after them and even the
two workers out at the end. By default xdist sorts files by their number of tests, which does the
opposite for this suite (its slowest files hold 2-10 tests each), so the conftest turns that off.

The list is measured, not guessed: worker-seconds per file from a full run's JUnit report
(``--junitxml``; sum ``time`` per ``classname``). A file not listed keeps its place after the listed ones;
a listed file that no longer exists is ignored. Refresh the list when a file's time changes a lot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

#: Longest first (worker-seconds of a full ``-n 2`` run on a 2-core machine, lightly loaded, for orientation only;
#: the files slimmed since then: estimated from their runs alone). Files of thousands of millisecond tests (tests/parity) are
#: left out on purpose: they even the workers out at the end.
SLOWEST_FIRST: tuple[str, ...] = (
    "tests/server/test_restart_storms.py",  # 95
    "tests/cluster/test_cluster.py",  # 85
    "tests/e2e/test_mention_e2e.py",  # 62
    "tests/e2e/test_review_e2e.py",  # 55
    "tests/e2e/test_attacks_write_e2e.py",  # 45
    "tests/review/test_review_checklist.py",  # 43
    "tests/review/test_hostile_diffs.py",  # 40
    "tests/server/test_full_disk_stores.py",  # 39
    "tests/e2e/test_attacks_agent_e2e.py",  # 36
    "tests/cluster/test_cluster_throughput_smoke.py",  # 36
    "tests/server/test_queue_workers.py",  # 33
    "tests/server/test_journal_damage.py",  # 33
    "tests/server/test_crash_replay.py",  # 32
    "tests/server/test_hostile_clients.py",  # 30
    "tests/e2e/test_memory_trust_e2e.py",  # 28
    "tests/cli/test_review_pull_url.py",  # 27
    "tests/learning/test_memory_object_store.py",  # 26
    "tests/mention/test_mention_handler.py",  # 25
    "tests/e2e/test_learning_loop_e2e.py",  # 24
    "tests/support_tests/test_fake_anthropic.py",  # 24
    "tests/config/test_config_fuzz.py",  # 24
    "tests/test_benchmark_cost_sizing.py",  # 21
    "tests/feedback/test_memory_trust.py",  # 21
    "tests/learning/test_ann_calibration.py",  # 20
    "tests/server/test_full_disk.py",  # 20
    "tests/cli/test_eval_cli.py",  # 19
    "tests/execution/test_sandbox_cli.py",  # 19
    "tests/e2e/test_attacks_memory_e2e.py",  # 17
    "tests/webhook/test_webhook_fuzz.py",  # 16
    "tests/learning/test_learning_embeddings.py",  # 15
    "tests/server/test_hostile_fuzz.py",  # 14
    "tests/github/test_github_retry.py",  # 14
    "tests/review/test_troubleshooting_skips.py",  # 13
    "tests/mention/write/test_write_permissions.py",  # 13
    "tests/cli/test_memory_cli.py",  # 12
    "tests/feedback/test_feedback_sync.py",  # 12
    "tests/server/test_full_disk_restart.py",  # 11
    "tests/learning/test_memory_ann.py",  # 10
    "tests/review/test_troubleshooting_model.py",  # 10
    "tests/learning/test_memory_search_lexical.py",  # 10
    "tests/github/test_token_validation.py",  # 9
    "tests/server/test_serve_cli.py",  # 9
    "tests/mention/test_mention_state.py",  # 9
    "tests/review/test_review_deliberate_fixes.py",  # 9
    "tests/cli/test_review_cli.py",  # 9
    "tests/jobs/test_scale_out_attacks.py",  # 8
    "tests/learning/test_onnx_minilm.py",  # 8
    "tests/review/test_trusted_config.py",  # 8
    "tests/storage/test_knowledge_store.py",  # 8
    "tests/support_tests/test_fake_github_git.py",  # 8
    "tests/jobs/test_journal_wal.py",  # 8
    "tests/spend_cap/test_spend_cap_in_handlers.py",  # 7
)


class _Item(Protocol):
    @property
    def nodeid(self) -> str: ...


_T = TypeVar("_T", bound=_Item)


def file_of(nodeid: str) -> str:
    """``tests/x/test_y.py::test_z[a]`` → ``tests/x/test_y.py``."""
    return nodeid.split("::", 1)[0]


def slowest_first(items: list[_T], order: Sequence[str] = SLOWEST_FIRST) -> None:
    """Sort ``items`` in place: the files of ``order`` first, in that order; within a file, and for every
    file not listed, the collection order is kept (a stable sort)."""
    rank = {path: i for i, path in enumerate(order)}
    items.sort(key=lambda item: rank.get(file_of(item.nodeid), len(rank)))
