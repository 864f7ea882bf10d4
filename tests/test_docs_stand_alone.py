"""The README and docs stand alone: every link stays inside the repository and resolves, and nothing points
at material that is not part of it (the port's reference folder beside the checkout)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")
OUTSIDE = re.compile(r"\.\./shared|shared/(?:spec|PARITY)|\bspec/(?:review|platform|exec)\.md|\bPARITY\.md")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lowercased, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", page.read_text(encoding="utf-8"), re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_resolve_inside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.is_relative_to(ROOT), f"{page.name}: link leaves the repository: {target}"
        assert resolved.exists(), f"{page.name}: dead link {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{page.name}: no heading for #{anchor} in {resolved.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_reference_to_material_outside_the_repository(page: Path) -> None:
    hits = [line for line in page.read_text(encoding="utf-8").splitlines() if OUTSIDE.search(line)]
    assert not hits, f"{page.name} refers to files that are not part of the repository: {hits[:3]}"
