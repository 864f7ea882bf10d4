"""The dashboard's tests: ``db_backend`` runs the query tests on SQLite files and on PostgreSQL."""

from support.db_backends import db_backend  # noqa: F401  (the fixture)
