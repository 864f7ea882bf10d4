"""The order in which ``make test`` (``pytest -n 3 --dist loadfile``) hands test files to its workers.

xdist gives a worker the next file whenever it is almost out of work. When a long file is handed out last,
one worker runs it alone while the others wait: the suite's wall time is the busiest worker's. So the files
that take longest go first, longest first, and the thousands of short tests come after them and even the
workers out at the end. By default xdist sorts files by their number of tests, which does the
opposite for this suite (its slowest files hold 2-10 tests each), so the conftest turns that off.

The list is measured, not guessed: worker-seconds per file from a full run's JUnit report
(``--junitxml``; sum ``time`` per ``classname``). A file not listed keeps its place after the listed ones;
a listed file that no longer exists is ignored. Refresh the list when a file's time changes a lot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

#: Longest first: worker-seconds (JUnit ``time``) of a full ``-n 3`` run on the 2-core machine, shared with
#: other work at the time, so for the order only. The parity-vector files run a test per function now
#: and sit among the short ones.
SLOWEST_FIRST: tuple[str, ...] = (
    "tests/server/test_restart_storms.py",  # 133
    "tests/cluster/test_cluster.py",  # 123
    "tests/e2e/test_review_e2e.py",  # 114
    "tests/e2e/test_mention_e2e.py",  # 112
    "tests/review/test_review_checklist.py",  # 106
    "tests/e2e/test_attacks_write_e2e.py",  # 78
    "tests/e2e/test_attacks_agent_e2e.py",  # 67
    "tests/review/test_hostile_diffs.py",  # 66
    "tests/cluster/test_cluster_throughput_smoke.py",  # 53
    "tests/server/test_journal_damage.py",  # 51
    "tests/server/test_full_disk_stores.py",  # 49
    "tests/cli/test_review_pull_url.py",  # 46
    "tests/mention/test_mention_handler.py",  # 46
    "tests/e2e/test_memory_trust_e2e.py",  # 44
    "tests/config/test_config_fuzz.py",  # 39
    "tests/learning/test_memory_object_store.py",  # 36
    "tests/server/test_hostile_clients.py",  # 32
    "tests/e2e/test_learning_loop_e2e.py",  # 31
    "tests/browser/test_dashboard_browser.py",  # 31
    "tests/feedback/test_memory_trust.py",  # 31
    "tests/support_tests/test_fake_anthropic.py",  # 31
    "tests/cli/test_eval_cli.py",  # 31
    "tests/server/test_queue_workers.py",  # 30
    "tests/server/test_crash_replay.py",  # 29
    "tests/learning/test_ann_calibration.py",  # 29
    "tests/test_benchmark_cost_sizing.py",  # 28
    "tests/server/test_full_disk.py",  # 27
    "tests/execution/test_sandbox_cli.py",  # 21
    "tests/e2e/test_attacks_memory_e2e.py",  # 20
    "tests/webhook/test_webhook_fuzz.py",  # 18
    "tests/learning/test_learning_embeddings.py",  # 16
    "tests/cli/test_memory_cli.py",  # 16
    "tests/server/test_hostile_fuzz.py",  # 15
    "tests/mention/write/test_write_permissions.py",  # 14
    "tests/github/test_github_retry.py",  # 14
    "tests/spend_cap/test_spend_cap_in_handlers.py",  # 14
    "tests/dashboard/test_dashboard_queries.py",  # 14
    "tests/server/test_full_disk_restart.py",  # 14
    "tests/feedback/test_feedback_sync.py",  # 13
    "tests/review/test_review_deliberate_fixes.py",  # 13
    "tests/review/test_troubleshooting_skips.py",  # 13
    "tests/jobs/test_scale_out_attacks.py",  # 12
    "tests/learning/test_memory_search_lexical.py",  # 12
    "tests/review/test_trusted_config.py",  # 12
    "tests/cli/test_review_cli.py",  # 11
    "tests/learning/test_onnx_minilm.py",  # 11
    "tests/learning/test_memory_table_create.py",  # 11
    "tests/storage/test_knowledge_store.py",  # 11
    "tests/cli/test_memory_import_formats.py",  # 11
    "tests/learning/test_memory_ann.py",  # 11
    "tests/cli/test_cli_main.py",  # 11
    "tests/review/test_troubleshooting_model.py",  # 10
    "tests/e2e/test_spend_cap_e2e.py",  # 10
    "tests/mention/test_memory_governance.py",  # 10
    "tests/review/test_review_lexical_channel.py",  # 9
    "tests/mention/test_mention_state.py",  # 9
    "tests/github/test_token_validation.py",  # 9
    "tests/server/test_serve_cli.py",  # 9
    "tests/execution/test_git_server.py",  # 8
    "tests/support_tests/test_fake_github_git.py",  # 8
    "tests/compat/test_glob.py",  # 8
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
