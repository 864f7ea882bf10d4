"""Everything the dashboard's routes share, built once when the app is made (:func:`kodiai.dashboard.web.mount`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import httpx
from jinja2 import Environment, PackageLoader, select_autoescape

from kodiai.dashboard.options import DashboardOptions
from kodiai.dashboard.session import CookieSigner, SessionStore
from kodiai.dashboard.sources import Sources
from kodiai.log import Logger
from kodiai.storage.database import Database
from kodiai.storage.knowledge import KnowledgeStore


@dataclass
class DashboardState:
    options: DashboardOptions
    signer: CookieSigner
    sessions: SessionStore
    sources: Sources
    templates: Environment
    http: httpx.AsyncClient
    knowledge: KnowledgeStore
    """The writable store (forget); pages read through :attr:`sources`."""
    memory: Any | None
    """The memory store when this process opened it (role ``all``), for forget's row removal."""
    jobs_target: str
    pg_journal: Any | None
    log: Logger

    knowledge_db: Database | None = None
    """A writable connection to the knowledge database: sessions, and forget/restore's governance rows."""
    embeddings: Any | None = None
    """The embedding provider when this process has the memory store open (restore writes a memory)."""

    async def aclose(self) -> None:
        await self.http.aclose()
        self.sources.close()
        if self.knowledge_db is not None and not self.knowledge_db.closed:
            self.knowledge_db.close()


@functools.cache
def template_environment() -> Environment:
    """The dashboard's templates, every one compiled when first asked for (at mount, i.e. start-up) rather than
    by a page's first request, and shared by every app of the process: they are the package's own files, and
    the environment holds no per-app state."""
    env = Environment(
        loader=PackageLoader("kodiai.dashboard", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = format_number
    env.filters["pct"] = format_share
    for name in env.list_templates():
        env.get_template(name)
    return env


def format_number(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return (
            f"{value:,.0f}"
            if value.is_integer() and abs(value) >= 100
            else f"{value:,.3g}"
            if abs(value) < 1
            else f"{value:,.2f}"
        )
    return str(value)


def format_share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"
