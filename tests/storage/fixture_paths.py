"""Where the original's fixture databases live (``../shared`` beside the checkout)."""

from __future__ import annotations

import shutil
from pathlib import Path

SHARED = Path(__file__).resolve().parents[3] / "shared"
FIXTURE_DBS = SHARED / "fixtures" / "db-phase56"
UPSTREAM_SCHEMA = SHARED / "fixtures" / "upstream_schema_cd3cee39.json"


def copy_fixture_db(name: str, target_dir: Path) -> Path:
    """Copy ``kodiai-<name>.db`` into ``target_dir`` (fixtures are read-only) and return the copy."""
    target = target_dir / f"kodiai-{name}.db"
    shutil.copyfile(FIXTURE_DBS / f"kodiai-{name}.db", target)
    return target
