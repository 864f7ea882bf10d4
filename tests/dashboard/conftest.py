"""The dashboard's tests: ``db_backend`` runs the query tests on SQLite files and on PostgreSQL; ``harness``
runs a real review (the rows it records for the dashboard)."""

from support.db_backends import db_backend  # noqa: F401  (the fixture)
from support.handler_fixtures import harness  # noqa: F401  (the fixture)
