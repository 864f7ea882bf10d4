"""The dashboard's tests: ``db_backend`` runs the query tests on SQLite files and on PostgreSQL; ``harness``
runs a real review (the rows it records for the dashboard); ``seeded`` is the dashboard seed on that
backend with the read-only sources the pages use."""

from collections.abc import Iterator

import pytest

from kodiai.dashboard.sources import Sources, open_sources
from support.db_backends import DbBackend, db_backend  # noqa: F401  (the fixture)
from support.handler_fixtures import harness  # noqa: F401  (the fixture)
from support.seed_dashboard import seed_dashboard


@pytest.fixture
def seeded(db_backend: DbBackend) -> Iterator[tuple[DbBackend, Sources]]:  # noqa: F811  (the fixture above)
    t, k, j = db_backend.target("telemetry"), db_backend.target("knowledge"), db_backend.target("jobs")
    seed_dashboard(t, k, j)
    sources = open_sources(t, k, j)
    try:
        yield db_backend, sources
    finally:
        sources.close()
