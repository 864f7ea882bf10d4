"""Operations over every store at once, run by the CLI with the server stopped: backup and restore
(``kodiai backup``) and the SQLite → PostgreSQL copy (``kodiai db migrate-to-postgres``).

They sit above the jobs package because the job journal is one of the stores they handle.
"""
