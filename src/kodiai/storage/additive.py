"""Additive-only migration rules: the idempotent add-column step and the checker that enforces them.

Migrations are plain ``.sql`` files wherever possible. The one thing plain SQL cannot express
idempotently in SQLite is "add this column unless the table already has it", which is needed for
columns the TypeScript original may already have added to its own files (``threshold_method``,
the findings comment-linkage columns). Those live in tiny ``.py`` migrations whose whole body is::

    from kodiai.storage.additive import AddColumn, add_column_steps

    steps = add_column_steps(AddColumn("retrieval_quality", "threshold_method", "TEXT"))

:func:`check_migration_file` parses both kinds (``.py`` files by AST, never executed) and reports every
statement that could drop, rename or rewrite anything. The PostgreSQL forms (``migrations/postgresql/…``)
are ``.sql`` only and may also create functions, aggregates and operators (SQLite's functions), never
``OR REPLACE`` one.
"""

from __future__ import annotations

import ast
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlparse
from yoyo import step

_IDENT = r'(?:"[^"]+"|`[^`]+`|\[[^\]]+\]|[A-Za-z_][A-Za-z0-9_]*)'
_CREATE_TABLE = re.compile(rf"^CREATE TABLE IF NOT EXISTS {_IDENT}(?:\.{_IDENT})? ?\(", re.I)
_CREATE_INDEX = re.compile(rf"^CREATE (?:UNIQUE )?INDEX IF NOT EXISTS {_IDENT} ON {_IDENT} ?\(", re.I)
_ADD_COLUMN = re.compile(rf"^ALTER TABLE {_IDENT} ADD (?:COLUMN )?({_IDENT}) (.*)$", re.I | re.S)
_FORBIDDEN = re.compile(
    r"\b(DROP|RENAME|UPDATE|DELETE|REPLACE|TRUNCATE|PRAGMA|INSERT|ATTACH|DETACH|VACUUM|REINDEX|"
    r"WRITABLE_SCHEMA)\b",
    re.I,
)
_FK_ACTIONS = re.compile(r"\bON (DELETE|UPDATE)\b", re.I)
_STRING = re.compile(r"'(?:[^']|'')*'")
_DOLLAR_BODY = re.compile(r"\$(\w*)\$.*?\$\1\$", re.S)
_CREATE_ROUTINE = re.compile(r"^CREATE (?:FUNCTION|AGGREGATE|OPERATOR) ", re.I)


def normalise_sql(sql: str) -> str:
    """Strip comments and collapse whitespace: the form the checker reasons about."""
    text = sqlparse.format(sql, strip_comments=True)
    return re.sub(r"\s+", " ", text).strip().rstrip(";").strip()


def check_additive_statement(sql: str, *, postgres: bool = False) -> list[str]:
    """Every way ``sql`` breaks the additive-only rule; empty when it is allowed.

    Allowed: ``CREATE TABLE IF NOT EXISTS`` (not ``AS SELECT``), ``CREATE [UNIQUE] INDEX IF NOT EXISTS``,
    ``ALTER TABLE … ADD COLUMN`` that is nullable or has a DEFAULT (and is neither PRIMARY KEY nor
    UNIQUE); with ``postgres`` also ``CREATE FUNCTION|AGGREGATE|OPERATOR`` (a new object; its body is
    not read). Everything else — DROP, RENAME, UPDATE/DELETE/INSERT of rows, table rebuilds, pragmas,
    ``CREATE OR REPLACE`` — is a violation.
    """
    stmt = normalise_sql(sql)
    if not stmt:
        return []
    problems: list[str] = []
    if postgres and _CREATE_ROUTINE.match(stmt):
        stmt = _DOLLAR_BODY.sub("$$ $$", stmt)
    scan = _FK_ACTIONS.sub(" ", _STRING.sub("''", stmt))
    for word in sorted({m.group(1).upper() for m in _FORBIDDEN.finditer(scan)}):
        problems.append(f"forbidden keyword {word}")
    upper = scan.upper()
    if _CREATE_TABLE.match(stmt):
        if re.search(r"\bAS\s*\(?\s*SELECT\b", upper):
            problems.append("CREATE TABLE … AS SELECT (table rebuild)")
    elif _CREATE_INDEX.match(stmt) or (postgres and _CREATE_ROUTINE.match(stmt)):
        pass
    else:
        add = _ADD_COLUMN.match(stmt)
        if add is None:
            problems.append(
                "only CREATE TABLE IF NOT EXISTS, CREATE [UNIQUE] INDEX IF NOT EXISTS and "
                "ALTER TABLE … ADD COLUMN are allowed"
            )
        else:
            decl = _STRING.sub("''", add.group(2)).upper()
            if re.search(r"\bNOT\s+NULL\b", decl) and not re.search(r"\bDEFAULT\b", decl):
                problems.append(f"column {add.group(1)} is NOT NULL without a DEFAULT")
            if re.search(r"\b(PRIMARY\s+KEY|UNIQUE)\b", decl):
                problems.append(f"column {add.group(1)} adds a PRIMARY KEY/UNIQUE constraint")
    return [f"{p}: {stmt[:120]}" for p in problems]


def split_sql(text: str) -> list[str]:
    """Split a migration file into statements exactly as yoyo does (sqlparse)."""
    return [s for s in sqlparse.split(text) if normalise_sql(s)]


@dataclass(frozen=True)
class AddColumn:
    """``ALTER TABLE <table> ADD COLUMN <column> <declaration>``, skipped when the column exists."""

    table: str
    column: str
    declaration: str

    @property
    def sql(self) -> str:
        return f'ALTER TABLE "{self.table}" ADD COLUMN "{self.column}" {self.declaration}'

    def apply(self, conn: sqlite3.Connection) -> None:
        existing = {row[1] for row in conn.execute(f'PRAGMA table_info("{self.table}")')}
        if not existing:
            raise sqlite3.OperationalError(f"no such table: {self.table}")
        if self.column not in existing:
            conn.execute(self.sql)


def add_column_steps(*columns: AddColumn) -> list[Any]:
    """Register one yoyo step per column (call at import time of a ``.py`` migration)."""
    for col in columns:
        problems = check_additive_statement(col.sql)
        if problems:
            raise ValueError("; ".join(problems))
    return [step(col.apply) for col in columns]


def _python_migration_columns(tree: ast.Module) -> tuple[list[AddColumn], list[str]]:
    columns: list[AddColumn] = []
    problems: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # docstring
        if isinstance(node, ast.ImportFrom) and node.module == "kodiai.storage.additive":
            continue
        if (
            isinstance(node, ast.Assign)
            and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["steps"]
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "add_column_steps"
            and not node.value.keywords
        ):
            for arg in node.value.args:
                values = (
                    [a.value for a in arg.args if isinstance(a, ast.Constant)]
                    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name)
                    else []
                )
                if (
                    isinstance(arg, ast.Call)
                    and isinstance(arg.func, ast.Name)
                    and arg.func.id == "AddColumn"
                    and not arg.keywords
                    and len(values) == 3 == len(arg.args)
                    and all(isinstance(v, str) for v in values)
                ):
                    columns.append(AddColumn(*[str(v) for v in values]))
                else:
                    problems.append(f"line {arg.lineno}: only AddColumn('table', 'column', 'decl') literals")
            continue
        problems.append(
            f"line {getattr(node, 'lineno', '?')}: a .py migration may only import from "
            "kodiai.storage.additive and assign steps = add_column_steps(AddColumn(...), ...)"
        )
    return columns, problems


def check_migration_file(path: Path) -> list[str]:
    """Every additive-rule violation in one migration file (``.sql`` or ``.py``)."""
    text = path.read_text(encoding="utf-8")
    postgres = "postgresql" in path.parts
    if path.suffix == ".sql":
        if path.name.endswith(".rollback.sql"):
            return [f"{path.name}: rollback files are not allowed (migrations are forward-only)"]
        return [
            f"{path.name}: {p}" for s in split_sql(text) for p in check_additive_statement(s, postgres=postgres)
        ]
    if path.suffix == ".py" and postgres:
        return [f"{path.name}: PostgreSQL migrations are .sql files only"]
    if path.suffix == ".py":
        columns, problems = _python_migration_columns(ast.parse(text, filename=str(path)))
        if not columns and not problems:
            problems.append("no AddColumn steps")
        problems += [p for c in columns for p in check_additive_statement(c.sql)]
        return [f"{path.name}: {p}" for p in problems]
    return [f"{path.name}: unknown migration file type"]
