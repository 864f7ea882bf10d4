"""Suite-wide fixtures. Area-specific fixtures live in their own conftest or tests/support module."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Real servers for the DATABASE_URL and object-storage tests, started on first use (tests/support/).
from support.postgres import _postgres_migrated, empty_postgres_url, postgres_server, postgres_url  # noqa: F401
from support.rewrite_cache import warm_before_workers
from support.s3 import s3_bucket, s3_server  # noqa: F401
from support.schedule import slowest_first

pytest_plugins = ["support.fake_github_fixtures"]  # the fake GitHub fixtures: fake, fake_server

# Embeddings load from the installed package only; never reach for a model hub in tests.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# onnxruntime keeps a device id and a telemetry database under the user's cache home otherwise.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
# Bytecode caches (gitignored __pycache__) for this run and every process it starts, even where the machine
# sets PYTHONDONTWRITEBYTECODE (container images often do): without them each xdist worker recompiles and
# re-rewrites every module it collects (~18 of its ~37 CPU-s of collection), and each `kodiai serve` or CLI
# child recompiles the package (~0.5 CPU-s a start). Set here, before xdist starts its workers.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Property tests: the same examples on every run (a failure reproduces; `print_blob` prints how), and no
# timing in the verdict: no per-example deadline, no "too slow" health check (a loaded 2-core machine is
# slow). `HYPOTHESIS_PROFILE=explore` draws new examples (and keeps failures in .hypothesis/).
settings.register_profile(
    "kodiai",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kodiai"))


def pytest_configure(config: pytest.Config) -> None:
    """xdist's loadfile/loadscope hand files out in collection order only with its test-count reordering
    off; the collection order is then slowest first (tests/support/schedule.py). The controller rewrites the
    test modules' asserts once before its workers start (tests/support/rewrite_cache.py)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    warm_before_workers(config, Path(__file__).resolve().parent)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slowest_first(items)


@pytest.fixture(scope="session", autouse=True)
def _caches_stay_in_the_session_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Nothing under ``~/.cache``: cache homes point into this run's temp dir, one for the whole run
    (shared by the xdist workers), so whatever a cache holds is made once per run, not once per test."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = root / "cache"
    cache.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(cache))
        yield
