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

#: Longest first (worker-seconds of a full run on a 2-core machine, lightly loaded, for orientation only). Files of
#: thousands of millisecond tests (tests/parity) are left out on purpose: they even the workers out at the end.
SLOWEST_FIRST: tuple[str, ...] = (
    "tests/cluster/test_cluster.py",  # 120
    "tests/server/test_restart_storms.py",  # 108
    "tests/e2e/test_review_e2e.py",  # 106
    "tests/e2e/test_mention_e2e.py",  # 70
    "tests/handlers/test_review_checklist.py",  # 60
    "tests/handlers/test_mention_handler.py",  # 47
    "tests/e2e/test_attacks_agent_e2e.py",  # 47
    "tests/server/test_hostile_clients.py",  # 45
    "tests/server/test_full_disk_stores.py",  # 38
    "tests/server/test_queue_workers.py",  # 38
    "tests/e2e/test_attacks_write_e2e.py",  # 37
    "tests/handlers/test_hostile_diffs.py",  # 34
    "tests/e2e/test_learning_loop_e2e.py",  # 33
    "tests/cluster/test_cluster_throughput_smoke.py",  # 32
    "tests/e2e/test_memory_trust_e2e.py",  # 32
    "tests/server/test_journal_damage.py",  # 31
    "tests/cli/test_review_pull_url.py",  # 27
    "tests/server/test_crash_replay.py",  # 27
    "tests/learning/test_memory_object_store.py",  # 25
    "tests/support_tests/test_fake_anthropic.py",  # 23
    "tests/test_benchmark_cost_sizing.py",  # 22
    "tests/config/test_config_fuzz.py",  # 22
    "tests/learning/test_ann_calibration.py",  # 20
    "tests/e2e/test_attacks_memory_e2e.py",  # 20
    "tests/execution/test_sandbox_cli.py",  # 20
    "tests/server/test_full_disk.py",  # 19
    "tests/webhook/test_webhook_fuzz.py",  # 17
    "tests/handlers/test_memory_trust.py",  # 17
    "tests/cli/test_eval_cli.py",  # 17
    "tests/learning/test_learning_embeddings.py",  # 16
    "tests/github/test_github_retry.py",  # 15
    "tests/cli/test_memory_cli.py",  # 13
    "tests/server/test_hostile_fuzz.py",  # 13
    "tests/execution/test_git_server.py",  # 13
    "tests/handlers/test_troubleshooting_skips.py",  # 13
    "tests/learning/test_memory_ann.py",  # 12
    "tests/handlers/test_write_permissions.py",  # 12
    "tests/server/test_full_disk_restart.py",  # 11
    "tests/execution/test_tool_surface_cli.py",  # 11
    "tests/github/test_token_validation.py",  # 10
    "tests/learning/test_same_pr_scope.py",  # 10
    "tests/handlers/test_feedback_sync.py",  # 10
    "tests/server/test_serve_cli.py",  # 10
    "tests/github/test_outbound_scan.py",  # 9
    "tests/learning/test_memory_search_lexical.py",  # 9
    "tests/storage/test_knowledge_store.py",  # 9
    "tests/write/test_mention_state.py",  # 9
    "tests/handlers/test_troubleshooting_model.py",  # 9
    "tests/learning/test_onnx_minilm.py",  # 9
    "tests/handlers/test_trusted_config.py",  # 8
    "tests/execution/test_executor.py",  # 8
    "tests/handlers/test_memory_governance.py",  # 8
    "tests/jobs/test_scale_out_attacks.py",  # 8
    "tests/e2e/test_spend_cap_e2e.py",  # 7
    "tests/handlers/test_spend_cap.py",  # 7
    "tests/cli/test_review_cli.py",  # 7
    "tests/server/test_serve_listen.py",  # 7
    "tests/handlers/test_review_lexical_channel.py",  # 7
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
