"""Copy a SQLite deployment's data into the PostgreSQL database of ``DATABASE_URL``
(``kodiai db migrate-to-postgres``).

Why a copy and not a dump: the PostgreSQL schema is made by its own migrations (``migrations/postgresql``,
same tables and columns, PostgreSQL types), so the safe path is to apply those first and then move the
rows column by column, converting each SQLite value to the column's PostgreSQL type. What this module
guarantees:

- **one transaction per store** (telemetry, knowledge, jobs): a store is copied whole or not at all;
- the source is read inside one SQLite read transaction (a consistent snapshot even if a server still
  writes) and never changed: it is opened read-only;
- a target table that already has rows is refused unless ``force`` (then the store's tables are emptied in
  the same transaction, so the result is exactly the SQLite data: running it twice gives the same rows);
  there is no "append": ids would collide, and the knowledge tables refer to each other by id;
- every identity sequence is moved past the copied ids (and past SQLite's ``sqlite_sequence``, so an id
  SQLite had handed out and deleted is never reused): new rows get new ids;
- the row counts of every table are compared inside the transaction before it commits, and again after;
- a SQLite file with a migration or a column this version does not know (a newer Kodiai made it) is
  refused before anything is written; a file of an older version (or the original's) is fine: its missing
  columns take their PostgreSQL defaults.

Pure parts (planning, value conversion) are separate from the I/O (:func:`migrate`). Errors never carry the
URL's password: the database is named by :func:`~kodiai.storage.database.safe_url`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

    PgConnection = psycopg.Connection[TupleRow]

STORES = ("telemetry", "knowledge", "jobs")
BATCH_ROWS = 2000
"""Rows read from SQLite and streamed into PostgreSQL's COPY at a time (bounded memory for big tables)."""

SKIPPED_TABLES: Mapping[str, Mapping[str, str]] = {
    "jobs": {"journal_meta": "the SQLite journal's own identity; the PostgreSQL journal keeps its own"},
}
"""Tables present in both schemas that are deliberately not copied, with the reason shown to the operator."""

LEGACY_PREFIXES = {
    "learning_memory_vec": "the original's sqlite-vec index (the learned memory is in LanceDB)"
}
"""Tables of the original's files that have no PostgreSQL form, with the reason they are left behind."""

UNFINISHED_STATUSES = ("pending", "running", "requeued")


class MigrateError(RuntimeError):
    """The copy cannot be done (nothing of the store in question was written)."""


# --- pure ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceTable:
    """A table of the SQLite file: its columns in order, its row count, and ``sqlite_sequence``'s value."""

    name: str
    columns: tuple[str, ...]
    rows: int
    sequence: int | None = None


@dataclass(frozen=True)
class TargetTable:
    """A table of the PostgreSQL database: column → PostgreSQL type, its row count (-1: not counted, not
    copied into), its id sequences."""

    name: str
    types: Mapping[str, str]
    rows: int
    sequences: Mapping[str, str] = field(default_factory=dict)
    """column → sequence name (identity or serial columns)."""


@dataclass(frozen=True)
class TablePlan:
    table: str
    columns: tuple[str, ...]
    source_rows: int
    target_rows: int | None
    """Rows in PostgreSQL before the copy; None when the table does not exist yet (dry run only)."""
    sequence: int | None = None


@dataclass(frozen=True)
class StorePlan:
    store: str
    source: str
    tables: tuple[TablePlan, ...]
    skipped: Mapping[str, str]


@dataclass(frozen=True)
class TableResult:
    store: str
    table: str
    sqlite_rows: int
    postgres_rows: int | None
    status: str


def is_internal(table: str) -> bool:
    """SQLite's and yoyo's bookkeeping tables: never data to copy."""
    return table.startswith(("sqlite_", "_yoyo", "yoyo_"))


def check_migrations(store: str, applied: Iterable[str], known: Iterable[str]) -> None:
    """Refuse a file with migrations this version does not know: its tables may have columns the
    PostgreSQL schema lacks, whose values would be dropped."""
    newer = sorted(set(applied) - set(known))
    if newer:
        raise MigrateError(
            f"{store}: the SQLite file has migrations this Kodiai does not know ({', '.join(newer)}): a newer "
            "Kodiai made it. Run migrate-to-postgres with that newer version."
        )


def plan_store(
    store: str,
    source: str,
    source_tables: Sequence[SourceTable],
    target_tables: Mapping[str, TargetTable] | None,
    dependencies: Mapping[str, set[str]] | None = None,
    *,
    strict: bool = True,
) -> StorePlan:
    """Which tables to copy, with which columns, in an order that satisfies the foreign keys.

    ``strict``: a source table or column missing from PostgreSQL is an error (its data would be lost),
    except the known leftovers of :data:`LEGACY_PREFIXES`. Not strict (a dry run, before the migrations):
    a missing table is planned with ``target_rows`` None ("would create")."""
    skipped: dict[str, str] = {}
    plans: list[TablePlan] = []
    for table in source_tables:
        if is_internal(table.name):
            continue
        reason = SKIPPED_TABLES.get(store, {}).get(table.name) or next(
            (why for prefix, why in LEGACY_PREFIXES.items() if table.name.startswith(prefix)), None
        )
        if reason:
            skipped[table.name] = reason
            continue
        target = None if target_tables is None else target_tables.get(table.name)
        if strict:
            if target is None:
                raise MigrateError(
                    f"{store}: table {table.name} of the SQLite file is not in the PostgreSQL schema (a newer "
                    "Kodiai made the file?); nothing was copied"
                )
            missing = [c for c in table.columns if c not in target.types]
            if missing:
                raise MigrateError(
                    f"{store}: column(s) {', '.join(missing)} of table {table.name} are not in the PostgreSQL "
                    "schema (a newer Kodiai made the file?); nothing was copied"
                )
        plans.append(
            TablePlan(
                table.name,
                table.columns,
                table.rows,
                None if target is None else target.rows,
                table.sequence,
            )
        )
    return StorePlan(store, source, tuple(_fk_order(plans, dependencies or {})), skipped)


def _fk_order(plans: list[TablePlan], dependencies: Mapping[str, set[str]]) -> list[TablePlan]:
    """Referenced tables before the tables that refer to them (reviews before findings); otherwise the
    SQLite file's own order."""
    names = {p.table for p in plans}
    done: set[str] = set()
    ordered: list[TablePlan] = []
    pending = list(plans)
    while pending:
        ready = [p for p in pending if not (dependencies.get(p.table, set()) & names) - done - {p.table}]
        if not ready:  # a cycle (none in Kodiai's schema): keep the file's order
            ready = pending[:1]
        for p in ready:
            ordered.append(p)
            done.add(p.table)
        pending = [p for p in pending if p.table not in done]
    return ordered


INTEGER_TYPES = frozenset({"bigint", "integer", "smallint"})
FLOAT_TYPES = frozenset({"double precision", "real", "numeric"})
TEXT_TYPES = frozenset({"text", "character varying", "character"})


def convert_value(value: Any, pg_type: str, where: str) -> Any:
    """``value`` as read from SQLite, in the Python type psycopg writes to a ``pg_type`` column.

    SQLite stores any value in any column; PostgreSQL does not. Lossless conversions are made (``3.0`` or
    ``'3'`` into a ``bigint``, a number into ``text``, text into ``bytea`` as UTF-8); anything else is a
    :class:`MigrateError` naming ``where`` (table, column, rowid), never a silent change."""
    if value is None:
        return None
    if pg_type in INTEGER_TYPES:
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            text = value.strip()
            try:
                return int(text)
            except ValueError:
                try:
                    number = float(text)
                except ValueError:
                    number = None
                if number is not None and number.is_integer():
                    return int(number)
        raise MigrateError(f"{where}: {_show(value)} is not an integer")
    if pg_type in FLOAT_TYPES:
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
        raise MigrateError(f"{where}: {_show(value)} is not a number")
    if pg_type in TEXT_TYPES:
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise MigrateError(f"{where}: binary data that is not UTF-8 text") from None
        elif isinstance(value, (int, float)):
            value = str(value)
        if "\x00" in value:
            raise MigrateError(f"{where}: text with a NUL character (PostgreSQL text cannot hold one)")
        return value
    if pg_type == "bytea":
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode("utf-8", "surrogatepass")
        raise MigrateError(f"{where}: {_show(value)} is not binary data")
    if pg_type == "boolean":
        return bool(value)
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


Converter = Callable[[Any, str], Any]


def row_converter(
    store: str,
    table: str,
    columns: Sequence[str],
    types: Mapping[str, str],
    overrides: Mapping[str, Converter],
) -> Callable[[int, Sequence[Any]], tuple[Any, ...]]:
    """A function turning one SQLite row (with its rowid first) into the row PostgreSQL receives."""
    kinds = [types.get(c, "text") for c in columns]
    fast: dict[str, type] = {
        **dict.fromkeys(INTEGER_TYPES, int),
        **dict.fromkeys(FLOAT_TYPES, float),
        **dict.fromkeys(TEXT_TYPES, str),
        "bytea": bytes,
    }
    plan = [(c, k, fast.get(k), overrides.get(f"{table}.{c}")) for c, k in zip(columns, kinds, strict=True)]

    def convert(rowid: int, row: Sequence[Any]) -> tuple[Any, ...]:
        out = []
        for (column, kind, expected, override), value in zip(plan, row, strict=True):
            if override is not None:
                value = override(value, f"{store}.{table}.{column} (rowid {rowid})")
            if value is None or (
                type(value) is expected and not (isinstance(value, str) and "\x00" in value)
            ):
                out.append(value)
            else:
                out.append(convert_value(value, kind, f"{store}.{table}.{column} (rowid {rowid})"))
        return tuple(out)

    return convert


def next_id(max_copied: int | None, sqlite_sequence: int | None) -> int:
    """The highest id already used: new rows start after it (``setval``)."""
    return max(max_copied or 0, sqlite_sequence or 0)


def redact(message: str, url: str) -> str:
    """``message`` without the URL's password (libpq repeats a malformed connection string in its error)."""
    password = urlsplit(url).password
    out = message.replace(url, "postgresql://…")
    for secret in {password, unquote(password)} if password else set():
        if secret:
            out = out.replace(secret, "***")
    return out


# --- I/O: SQLite --------------------------------------------------------------------------------------


def open_source(path: Path) -> sqlite3.Connection:
    """The SQLite file, read-only; a missing file or one that is not a database is a :class:`MigrateError`."""
    if not path.is_file():
        raise MigrateError(f"no SQLite file at {path}")
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("BEGIN")  # one snapshot for the counts and the copy
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise MigrateError(f"{path} is not a readable SQLite database: {exc}") from None
    return conn


def read_source(conn: sqlite3.Connection) -> tuple[list[SourceTable], list[str]]:
    """The file's tables (in creation order) and its applied migration ids."""
    names = [
        str(r[0])
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid").fetchall()
    ]
    sequences: dict[str, int] = {}
    if "sqlite_sequence" in names:
        sequences = {str(n): int(s) for n, s in conn.execute("SELECT name, seq FROM sqlite_sequence")}
    tables = []
    for name in names:
        if is_internal(name) or any(name.startswith(p) for p in LEGACY_PREFIXES):
            tables.append(SourceTable(name, (), 0))
            continue
        columns = tuple(str(r[1]) for r in conn.execute(f'PRAGMA table_info("{name}")'))
        rows = int(conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0])
        tables.append(SourceTable(name, columns, rows, sequences.get(name)))
    applied: list[str] = []
    if "_yoyo_migration" in names:
        applied = [str(r[0]) for r in conn.execute("SELECT migration_id FROM _yoyo_migration")]
    return tables, applied


def foreign_key_problems(conn: sqlite3.Connection) -> list[str]:
    """Rows whose reference points nowhere (SQLite may hold them; PostgreSQL refuses them)."""
    found: dict[tuple[str, str], int] = {}
    for table, _rowid, parent, _fk in conn.execute("PRAGMA foreign_key_check").fetchall():
        found[(str(table), str(parent))] = found.get((str(table), str(parent)), 0) + 1
    return [f"{n} row(s) of {t} refer to missing {p} rows" for (t, p), n in sorted(found.items())]


def unfinished_jobs(conn: sqlite3.Connection) -> int:
    """Deliveries the SQLite journal has not finished (their work has not run, or not to the end)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'delivery_journal'").fetchone():
        return 0
    marks = ", ".join("?" * len(UNFINISHED_STATUSES))
    row = conn.execute(
        f"SELECT count(*) FROM delivery_journal WHERE status IN ({marks})", UNFINISHED_STATUSES
    )
    return int(row.fetchone()[0])


def _zstd_payload(value: Any, where: str) -> Any:
    """The jobs journal stores a body zstd-compressed; rows an early version wrote as TEXT are compressed
    here, since a ``bytea`` column cannot tell them apart from compressed bytes when read."""
    if isinstance(value, str):
        from kodiai.jobs.journal_rows import PayloadCodec

        return PayloadCodec().encode(value.encode("utf-8", "surrogatepass"))
    return value


OVERRIDES: Mapping[str, Mapping[str, Converter]] = {"jobs": {"delivery_payloads.payload": _zstd_payload}}


# --- I/O: PostgreSQL ----------------------------------------------------------------------------------


def _target_tables(conn: PgConnection, counted: Iterable[str]) -> dict[str, TargetTable]:
    """Every table of the current schema: column types, identity/serial sequences, and the row count of
    the ``counted`` ones (the tables about to be copied; -1 for the others)."""
    types: dict[str, dict[str, str]] = {}
    for table, column, kind in conn.execute(
        "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
        "JOIN information_schema.tables t USING (table_schema, table_name) "
        "WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' "
        "ORDER BY c.table_name, c.ordinal_position"
    ).fetchall():
        types.setdefault(str(table), {})[str(column)] = str(kind)
    sequences: dict[str, dict[str, str]] = {}
    for table, column, seq in conn.execute(
        "SELECT c.table_name, c.column_name, pg_get_serial_sequence(quote_ident(c.table_name), c.column_name) "
        "FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name) "
        "WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' "
        "AND (c.is_identity = 'YES' OR c.column_default LIKE 'nextval(%')"
    ).fetchall():
        if seq:
            sequences.setdefault(str(table), {})[str(column)] = str(seq)
    wanted = set(counted)
    out = {}
    for table, cols in types.items():
        rows = _count(conn, table) if table in wanted else -1
        out[table] = TargetTable(table, cols, rows, sequences.get(table, {}))
    return out


def _dependencies(conn: PgConnection) -> dict[str, set[str]]:
    """table → the tables its foreign keys refer to."""
    deps: dict[str, set[str]] = {}
    for child, parent in conn.execute(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c "
        "JOIN pg_namespace n ON n.oid = c.connamespace WHERE c.contype = 'f' AND n.nspname = current_schema()"
    ).fetchall():
        deps.setdefault(str(child).strip('"'), set()).add(str(parent).strip('"'))
    return deps


def _connect(url: str) -> PgConnection:
    import psycopg

    from kodiai.storage.database import safe_url

    try:
        return psycopg.connect(url, connect_timeout=10, autocommit=True)
    except Exception as exc:  # psycopg.Error, or a malformed URL
        raise MigrateError(f"cannot connect to {safe_url(url)}: {redact(str(exc).strip(), url)}") from None


def _copy_table(
    pg: PgConnection, src: sqlite3.Connection, store: str, plan: TablePlan, target: TargetTable
) -> None:
    columns = ", ".join(f'"{c}"' for c in plan.columns)
    convert = row_converter(store, plan.table, plan.columns, target.types, OVERRIDES.get(store, {}))
    cursor = src.execute(f'SELECT rowid, {columns} FROM "{plan.table}"')
    with pg.cursor() as cur, cur.copy(f'COPY "{plan.table}" ({columns}) FROM STDIN') as copy:
        while batch := cursor.fetchmany(BATCH_ROWS):
            for row in batch:
                copy.write_row(convert(row[0], row[1:]))


def _set_sequences(pg: PgConnection, plan: TablePlan, target: TargetTable) -> None:
    """New rows get ids past every copied one (and past ids SQLite handed out before)."""
    for column, sequence in target.sequences.items():
        used = next_id(_int_value(pg, f'SELECT max("{column}") FROM "{plan.table}"'), plan.sequence)
        if used > 0:
            pg.execute("SELECT setval(%s::regclass, %s, true)", (sequence, used))
        else:
            pg.execute("SELECT setval(%s::regclass, 1, false)", (sequence,))


PARKED = "the queue never saw them: `kodiai jobs retry --all-dead` runs them on PostgreSQL"
PARKED_ERROR = (
    "not finished when kodiai db migrate-to-postgres copied the SQLite journal; `kodiai jobs retry` runs it"
)


def _park_unfinished(pg: PgConnection) -> int:
    """Deliveries the SQLite server had not finished (pending, running, requeued) have no job in the
    PostgreSQL queue, so nothing would ever run them: they arrive as ``dead`` (body kept, finished handlers
    remembered), which `kodiai jobs retry` puts back in the queue; the operator decides."""
    marks = ", ".join(["%s"] * len(UNFINISHED_STATUSES))
    cur = pg.execute(
        f"UPDATE delivery_journal SET status = 'dead', error = %s WHERE status IN ({marks})",
        (PARKED_ERROR, *UNFINISHED_STATUSES),
    )
    return int(cur.rowcount)


def _count(pg: PgConnection, table: str) -> int:
    return _int_value(pg, f'SELECT count(*) FROM "{table}"') or 0


def _int_value(pg: PgConnection, sql: str) -> int | None:
    """The single value of an aggregate query, as an int (``None``: SQL NULL, e.g. ``max`` of no rows)."""
    row = pg.execute(sql).fetchone()
    return None if row is None or row[0] is None else int(row[0])


@dataclass
class MigrationReport:
    results: list[TableResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    applied_migrations: list[str] = field(default_factory=list)


def plan_sources(sources: Mapping[str, Path]) -> list[tuple[StorePlan, sqlite3.Connection]]:
    """Open every file and check it before anything is written: a missing file, a newer schema or a dangling
    reference in any store stops the whole run."""
    from kodiai.storage.migrations import load_migrations

    opened: list[tuple[str, Path, sqlite3.Connection, list[SourceTable]]] = []
    try:
        for store, path in sources.items():
            conn = open_source(path)
            opened.append((store, path, conn, []))
            tables, applied = read_source(conn)
            check_migrations(store, applied, [m.id for m in load_migrations(store)])
            problems = foreign_key_problems(conn)
            if problems:
                raise MigrateError(
                    f"{store} ({path}): "
                    + "; ".join(problems)
                    + ". PostgreSQL refuses such rows: delete them "
                    "from the SQLite file (or restore it from a backup) first"
                )
            opened[-1] = (store, path, conn, tables)
    except BaseException:
        for _, _, conn, _ in opened:
            conn.close()
        raise
    return [
        (plan_store(store, str(path), tables, None, strict=False), conn)
        for store, path, conn, tables in opened
    ]


def migrate(
    url: str,
    sources: Mapping[str, Path],
    *,
    force: bool = False,
    dry_run: bool = False,
    log: Callable[[str], None] = lambda _line: None,
) -> MigrationReport:
    """Copy each store's SQLite file at ``sources[store]`` into the PostgreSQL database at ``url``.

    ``dry_run``: nothing is written (no migration either); the report has each table's rows on both sides.
    Raises :class:`MigrateError` when a store cannot be copied; stores copied before it stay committed
    (each is its own transaction, and a rerun refuses them unless ``force``)."""
    from kodiai.storage.migrations import MigrationError, apply_postgres_migrations

    report = MigrationReport()
    planned = plan_sources(sources)
    try:
        for plan, conn in planned:
            if plan.store == "jobs" and dry_run and (open_jobs := unfinished_jobs(conn)):
                report.notes.append(
                    f"jobs: {open_jobs} unfinished deliveries would arrive as dead ({PARKED})"
                )
        pg = _connect(url)  # first: an unreachable server is named before yoyo tries
        try:
            if not dry_run:
                for store in sources:
                    try:
                        report.applied_migrations += apply_postgres_migrations(url, store)
                    except MigrationError as exc:
                        raise MigrateError(redact(str(exc), url)) from None
            for plan, conn in planned:
                _migrate_store(pg, conn, plan, force=force, dry_run=dry_run, report=report, log=log)
        finally:
            pg.close()
    finally:
        for _, conn in planned:
            conn.close()
    return report


class _Rollback(Exception):
    """Leave a dry run's transaction without writing."""


def _dry_action(target_rows: int | None, force: bool) -> str:
    if target_rows is None:
        return "would create and copy"
    if target_rows == 0:
        return "would copy"
    return "would replace (--force)" if force else "refused: has rows (--force replaces them)"


def _migrate_store(
    pg: PgConnection,
    src: sqlite3.Connection,
    source_plan: StorePlan,
    *,
    force: bool,
    dry_run: bool,
    report: MigrationReport,
    log: Callable[[str], None],
) -> None:
    import psycopg

    store = source_plan.store
    source_tables = [SourceTable(p.table, p.columns, p.source_rows, p.sequence) for p in source_plan.tables]
    skipped = [TableResult(store, t, -1, None, f"skipped: {why}") for t, why in source_plan.skipped.items()]
    try:
        with pg.transaction():
            if not dry_run:  # one migration run at a time, and no store transaction of a server meanwhile
                pg.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"kodiai:{store}",))
            targets = _target_tables(pg, (t.name for t in source_tables))
            plan = plan_store(
                store, source_plan.source, source_tables, targets, _dependencies(pg), strict=not dry_run
            )
            if dry_run:
                report.results += skipped
                report.results += [
                    TableResult(
                        store, p.table, p.source_rows, p.target_rows, _dry_action(p.target_rows, force)
                    )
                    for p in plan.tables
                ]
                raise _Rollback
            occupied = [f"{p.table} ({p.target_rows} rows)" for p in plan.tables if p.target_rows]
            if occupied and not force:
                raise MigrateError(
                    f"{store}: PostgreSQL already has rows in {', '.join(occupied)}; nothing was copied. "
                    "--force replaces the store's tables with the SQLite data"
                )
            if occupied:  # the store's tables in one statement: their foreign keys allow it
                pg.execute("TRUNCATE " + ", ".join(f'"{p.table}"' for p in plan.tables))
            for p in plan.tables:
                log(f"{store}.{p.table}: copying {p.source_rows} rows")
                _copy_table(pg, src, store, p, targets[p.table])
                _set_sequences(pg, p, targets[p.table])
            if store == "jobs" and any(p.table == "delivery_journal" for p in plan.tables):
                parked = _park_unfinished(pg)
                if parked:
                    report.notes.append(f"jobs: {parked} unfinished deliveries arrived as dead ({PARKED})")
            counted = [(p.table, p.source_rows, _count(pg, p.table)) for p in plan.tables]
            wrong = [f"{t}: SQLite {s}, PostgreSQL {n}" for t, s, n in counted if s != n]
            if wrong:
                raise MigrateError(
                    f"{store}: row counts differ after the copy ({', '.join(wrong)}); nothing was committed"
                )
    except _Rollback:
        return
    except psycopg.Error as exc:
        detail = exc.diag.message_primary or type(exc).__name__
        raise MigrateError(
            f"{store}: PostgreSQL refused the copy ({detail}); nothing of {store} was committed"
        ) from None
    report.results += skipped
    report.results += [  # counted again after the commit: what a server will now see
        TableResult(
            store, p.table, p.source_rows, _count(pg, p.table), "replaced" if p.target_rows else "copied"
        )
        for p in plan.tables
    ]
