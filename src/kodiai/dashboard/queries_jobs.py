"""Jobs: the delivery journal's recent rows (state, attempts, last error), the viewer's installations only."""

from __future__ import annotations

from kodiai.dashboard.scope import Scope
from kodiai.dashboard.tables import Table
from kodiai.storage.database import Executor

JOB_COLUMNS = (
    "delivery_id",
    "event_name",
    "action",
    "installation_id",
    "status",
    "attempts",
    "received_at",
    "started_at",
    "finished_at",
    "error",
)
LIMIT = 100


def recent_jobs(
    jobs: Executor | None, scope: Scope, *, status: str | None = None, limit: int = LIMIT
) -> Table:
    if jobs is None:
        return Table("jobs", "Recent deliveries", JOB_COLUMNS, [])
    isql, iparams = scope.installation_sql()
    state_sql, state_params = (" AND status = ?", [status]) if status else ("", [])
    rows = jobs.fetch_all(
        f"SELECT {', '.join(JOB_COLUMNS)} FROM delivery_journal WHERE status <> 'ignored'{isql}{state_sql}"
        " ORDER BY seq DESC LIMIT ?",
        (*iparams, *state_params, int(limit)),
    )
    return Table("jobs", "Recent deliveries", JOB_COLUMNS, [tuple(r) for r in rows])


def installation_of(jobs: Executor | None, delivery_id: str) -> int | None:
    """The delivery's installation (the retry's access check); None when the journal has no such row."""
    if jobs is None:
        return None
    row = jobs.fetch_one("SELECT installation_id FROM delivery_journal WHERE delivery_id = ?", (delivery_id,))
    return None if row is None else int(row[0])


def ledger_repositories(telemetry: Executor, installation_id: int) -> list[str]:
    """The repositories the spend ledger has seen runs of for ``installation_id`` (the operator's
    installation filter: the ledger records every run with its installation, whatever telemetry says)."""
    rows = telemetry.fetch_all(
        "SELECT DISTINCT repo FROM spend_ledger WHERE installation_id = ? ORDER BY repo", (installation_id,)
    )
    return [str(r[0]) for r in rows]
