"""The README, the changelog and docs stand alone and speak to operators.

- Every link stays inside the repository and resolves (anchors too); no link to a web page.
- Nothing points at material that is not part of the repository: the behaviour specification and
  architecture notes the port was written from (``spec/…``, "spec §…", ``ARCHITECTURE.md``, the
  reference folder beside the checkout).
- User pages carry no porting jargon ("the original", "TypeScript original", "JS", js-yaml, "parity",
  "port addition"…): an operator has never seen the TypeScript Kodiai and should not have to. That
  vocabulary is allowed only on the pages listed in :data:`CONTRIBUTOR_PAGES` and in the migration
  sections listed in :data:`MIGRATION_SECTIONS`.
- The README's CLI list names every command the ``kodiai`` app registers, and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    p
    for p in [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    if p.exists()
]
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")

#: Pages written for contributors, where porting vocabulary is the subject. Each with the reason.
CONTRIBUTOR_PAGES = {
    "docs/contributing.md": "the contributors' page: what parity means, JS→Python traps, the parity tests",
    "docs/parity.md": "what stays compatible with the TypeScript Kodiai and every deliberate difference",
}

#: Sections of user pages for operators who ran the TypeScript Kodiai before: page → heading prefix.
MIGRATION_SECTIONS = {
    "README.md": "Coming from the TypeScript Kodiai",
    "docs/operations.md": "Upgrading from the TypeScript",
}

#: References to material that is not part of the repository, forbidden on every page.
OUTSIDE = {
    "spec section": re.compile(r"\bspec\s*§|§"),
    "spec folder": re.compile(r"\bspec/(?:review|platform|exec)\b"),  # not RSpec's spec/** in a glob
    "architecture notes": re.compile(r"\bARCHITECTURE\.md\b"),
    "reference folder": re.compile(r"\.\./shared|\bshared/"),
    "reference parity notes": re.compile(r"\bPARITY\.md\b|\bPARITY Q\d+|\b(?:review|exec|platform) Q\d+\b"),
    "vectors README section": re.compile(r"README §|vectors README"),
}

#: Where the reference folder may be named (as plain text, never a link), and why.
REFERENCE_FOLDER_ALLOWED = {
    "docs/contributing.md": "the parity tests read their vectors from there; contributors must know it",
}

#: Porting vocabulary, forbidden on user pages.
JARGON = {
    "the TypeScript original": re.compile(
        r"\b(?:the|a) TypeScript\b(?! (?:file|code|project|source))|\bTypeScript(?:'s| original| Kodiai| version)\b"
    ),
    "the original": re.compile(r"\bthe original\b", re.I),
    "js-yaml": re.compile(r"js-yaml", re.I),
    "JS": re.compile(r"\bJS\b"),
    "parity": re.compile(r"\bparity\b(?!\.md)", re.I),
    "the port": re.compile(
        r"\b(?:this|the) port\b(?! (?:number|it|to|\d))|\bport(?:'s)? (?:addition|change|adds)", re.I
    ),
    "spec": re.compile(r"\bspec\b(?!/\*| files?| sheets?)", re.I),
    "picomatch": re.compile(r"picomatch", re.I),
    "Bun": re.compile(r"\bBun\b"),
}


def _rel(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _sections(text: str) -> Iterator[tuple[str, str]]:
    """Each line with the heading it sits under (code fences do not start headings)."""
    heading, fenced = "", False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#+\s+(.*)", line)):
            heading = m.group(1).strip()
        yield heading, line


def problems(page: str, text: str) -> list[str]:
    """Every line of ``text`` (the page at repository path ``page``) that breaks a rule, as ``rule: line``."""
    found = []
    contributor = page in CONTRIBUTOR_PAGES
    migration = MIGRATION_SECTIONS.get(page)
    for heading, line in _sections(text):
        for rule, pattern in OUTSIDE.items():
            if rule == "reference folder" and page in REFERENCE_FOLDER_ALLOWED:
                continue
            if pattern.search(line):
                found.append(f"{rule}: {line.strip()}")
        if contributor or (migration and heading.startswith(migration)):
            continue
        # Link targets (parity.md#security-over-parity) are not prose.
        prose = re.sub(r"\]\([^)]*\)", "]()", line)
        for rule, pattern in JARGON.items():
            if pattern.search(prose):
                found.append(f"{rule}: {line.strip()}")
    return found


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lowercased, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", page.read_text(encoding="utf-8"), re.M)}


def bad_links(page: Path, text: str) -> list[str]:
    """Every link of ``text`` (the content of ``page``) that leaves the repository, is dead, or names a
    missing heading. A web page can move or vanish: name it in plain text instead."""
    found = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://|mailto:", target):
            found.append(f"link to a page outside the repository: {target}")
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.is_relative_to(ROOT):
            found.append(f"link leaves the repository: {target}")
        elif not resolved.exists():
            found.append(f"dead link: {target}")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            found.append(f"no heading for #{anchor} in {resolved.name}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_links_resolve_inside_the_repository(page: Path) -> None:
    found = bad_links(page, page.read_text(encoding="utf-8"))
    assert not found, f"{_rel(page)}: {found}"


def test_the_link_check_can_fail() -> None:
    page = ROOT / "docs" / "mention.md"
    text = "[a](https://example.com/x) [b](missing.md) [c](../../../etc/passwd) [d](parity.md#nowhere) [e](parity.md)"
    assert len(bad_links(page, text)) == 4


#: The example files operators copy are user pages too.
EXAMPLES = [ROOT / ".env.example", ROOT / ".kodiai.yml.example"]


@pytest.mark.parametrize("page", PAGES + EXAMPLES, ids=_rel)
def test_pages_stand_alone_and_speak_to_operators(page: Path) -> None:
    hits = problems(_rel(page), page.read_text(encoding="utf-8"))
    assert not hits, f"{_rel(page)}:\n" + "\n".join(hits)


def test_exempt_pages_exist() -> None:
    """An exemption for a page that was renamed or removed would silently exempt nothing."""
    for page in [*CONTRIBUTOR_PAGES, *REFERENCE_FOLDER_ALLOWED]:
        assert (ROOT / page).exists(), page


@pytest.mark.parametrize(
    "line",
    [
        "the generic prompt of spec §1.9",
        "See ARCHITECTURE.md, *Embedded defaults*.",
        "as written in spec/review.md",
        "the spec asks for it",
        "vectors in ../shared/parity-vectors",
        "the PARITY Q13 fix",
        "This is a Python port of the TypeScript original.",
        "YAML 1.2, exactly as js-yaml",
        "a JS number in the schema",
        "the pure review modules and JS-parity notes",
        "pure review logic at parity",
        "keeps the original's columns",
        "The port adds four things",
        "(*port addition*)",
        "The globs are picomatch with `dot: true`",
    ],
)
def test_the_check_catches_each_rule_on_a_user_page(line: str) -> None:
    assert problems("docs/mention.md", f"# Mentions\n\nText.\n{line}\n")


def test_contributor_pages_may_use_porting_words_but_not_unreachable_references() -> None:
    porting = "Every function gives the same result as the TypeScript original (parity vectors, js-yaml, JS)."
    assert problems("docs/contributing.md", porting) == []
    assert problems("docs/contributing.md", "The vectors live in ../shared/parity-vectors.") == []
    assert problems("docs/contributing.md", "See spec §4.10.")
    assert problems("docs/parity.md", "the folder ../shared/parity-vectors")


def test_migration_sections_are_the_only_exception_on_user_pages() -> None:
    text = "# Kodiai\n\nIntro.\n\n## Coming from the TypeScript Kodiai\n\nThe original's files work.\n\n## Next\n\n"
    assert problems("README.md", text) == []
    assert problems("README.md", text + "The original's files work.\n")


def test_links_and_language_names_are_not_jargon() -> None:
    ok = (
        "See the [security table](parity.md#security-over-parity) in parity.md; `--languages TypeScript`, Go."
    )
    assert problems("docs/learned-memory.md", ok) == []


# --- the README's CLI list ------------------------------------------------------------------------


def _commands(command: Any, path: str) -> Iterator[str]:
    """Every leaf command under ``command``, as ``kodiai group sub``; deferred commands are loaded."""
    real = command.load() if hasattr(command, "load") else command
    if hasattr(real, "commands"):  # a group (typer vendors its own click: no isinstance)
        for name, sub in real.commands.items():
            if not sub.hidden:
                yield from _commands(sub, f"{path} {name}")
    else:
        yield path


def _readme_cli_lines() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## The CLI", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block, "README: no ```text block under ## The CLI"
    return [line.strip() for line in block.group(1).splitlines() if line.strip().startswith("kodiai ")]


def _named(line: str, commands: set[str]) -> str | None:
    """The longest registered command a README line starts with."""
    words = line.split()
    for n in range(len(words), 1, -1):
        if " ".join(words[:n]) in commands:
            return " ".join(words[:n])
    return None


def test_readme_cli_list_names_every_registered_command() -> None:
    from kodiai.cli.main import app

    registered = set(_commands(typer.main.get_command(app), "kodiai"))
    assert {
        "kodiai serve",
        "kodiai memory list",
        "kodiai jobs retry",
    } <= registered  # the walk reaches leaves
    lines = [line for line in _readme_cli_lines() if not line.startswith("kodiai --")]
    unknown = [line for line in lines if _named(line, registered) is None]
    assert not unknown, f"README names commands that do not exist: {unknown}"
    missing = registered - {_named(line, registered) for line in lines}
    assert not missing, f"README's CLI list misses {sorted(missing)}"


# --- SQL says which database it runs against -------------------------------------------------------

#: A database named by its default file, or by operations.md's ``-- db: <name>`` first line (that page's
#: table "The databases" gives each name's file, and tests/storage/test_operations_doc.py runs each query
#: against the database it names).
DATABASE = re.compile(r"kodiai-(?:telemetry|knowledge|jobs)\.db|^-- db: (?:telemetry|knowledge|jobs)\b")


def sql_blocks_without_database(text: str) -> list[str]:
    """Each ```sql block whose first line, or the two lines before the block, do not name its database."""
    missing = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "```sql":
            first = lines[i + 1] if i + 1 < len(lines) else ""
            if not any(DATABASE.search(near) for near in [*lines[max(0, i - 2) : i], first]):
                missing.append(first.strip() or f"line {i + 1}")
    return missing


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_each_sql_block_names_its_database(page: Path) -> None:
    missing = sql_blocks_without_database(page.read_text(encoding="utf-8"))
    assert not missing, f"{_rel(page)}: SQL blocks that do not say which database they query: {missing}"


def test_the_sql_check_can_fail() -> None:
    assert sql_blocks_without_database("Run:\n\n```sql\nSELECT 1;\n```\n") == ["SELECT 1;"]
    ok = "```sql\n-- telemetry database (./data/kodiai-telemetry.db)\nSELECT 1;\n```\n"
    assert sql_blocks_without_database(ok) == []
    assert sql_blocks_without_database("sqlite3 ./data/kodiai-jobs.db\n\n```sql\nSELECT 1;\n```\n") == []
    assert sql_blocks_without_database("```sql\n-- db: knowledge\nSELECT 1;\n```\n") == []
    assert sql_blocks_without_database("```sql\n-- db: memory\nSELECT 1;\n```\n") == ["-- db: memory"]


def test_readme_lists_every_docs_page() -> None:
    """A page nobody links to is a page nobody reads."""
    linked = set(LINK.findall((ROOT / "README.md").read_text(encoding="utf-8")))
    pages = [p for p in [ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))] if p.exists()]
    unlisted = [_rel(p) for p in pages if _rel(p) not in linked]
    assert not unlisted, f"README's Documentation list misses {unlisted}"


# --- the code cites the behaviour reference, never material outside the repository ----------------------

#: The behaviour reference pages, by the letter of their ids (``behaviour R2.24``, ``E3.6``, ``P3.1``).
BEHAVIOUR_PAGES = {
    "R": ROOT / "docs" / "behaviour" / "review.md",
    "E": ROOT / "docs" / "behaviour" / "mention-and-execution.md",
    "P": ROOT / "docs" / "behaviour" / "platform.md",
}
#: A citation of the specification the code was written from, which is not part of the repository. A bare
#: ``§N`` is allowed only where a line names the parity vectors' README (the contributors' reference).
SPEC_CITATION = re.compile(r"\bspec/(?:review|platform|exec)\.md|shared/spec\b|\b(?:spec|review|exec|platform)\s*§")
BARE_SECTION = re.compile(r"§\s?\d")
#: A cited behaviour id: dotted anywhere (``R2.24``, ``E3.14.3d``), undotted after "behaviour" (``behaviour R1``).
CITED_ID_START = re.compile(r"[REP][0-9]+\.[0-9]")  # a literal-led pattern: fast over 6 MB of code
CITED_ID = re.compile(r"[REP][0-9]+(?:\.[0-9]+)+[a-z]?\b")
CITED_UNDOTTED_ID = re.compile(r"behaviour ([REP][0-9]+)\b(?!\.[0-9])")
DEFINED_ID = re.compile(r"^#+\s+([REP]\d+(?:\.\d+)*[a-z]?)\s|\*\*([REP]\d+(?:\.\d+)*[a-z]?)\b", re.M)
CODE_SUFFIXES = {".py", ".md", ".txt", ".toml", ".yml", ".yaml", ".json", ".sql"}
#: This checker quotes the forbidden forms on purpose.
CITATION_CHECKER = Path(__file__).resolve()


def _code_files() -> Iterator[Path]:
    for top in ("src", "tests", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*")):
            if (
                path.suffix in CODE_SUFFIXES
                and path.is_file()
                and "__pycache__" not in path.parts
                and path.resolve() != CITATION_CHECKER
            ):
                yield path


def spec_citations(text: str) -> list[str]:
    """Each line of ``text`` that cites the outside specification (``spec/review.md §…``, a bare ``§1.2``)."""
    if "§" not in text and "spec" not in text:
        return []  # most files
    return [
        line.strip()
        for line in text.splitlines()
        if SPEC_CITATION.search(line) or (BARE_SECTION.search(line) and "README" not in line)
    ]


def cited_ids(text: str) -> set[str]:
    found = set(CITED_UNDOTTED_ID.findall(text))
    for start in (m.start() for m in CITED_ID_START.finditer(text)):
        before = text[start - 1] if start else " "
        if not (before.isalnum() or before in "._-") and (m := CITED_ID.match(text, start)):
            found.add(m.group(0))
    return found


def defined_ids() -> dict[str, set[str]]:
    """The ids each behaviour page defines: its headings' leading ids and its items that open in bold
    (``**E3.21.1** …``)."""
    return {
        letter: {a or b for a, b in DEFINED_ID.findall(page.read_text(encoding="utf-8"))}
        for letter, page in BEHAVIOUR_PAGES.items()
    }


def missing_ids(cited: set[str], defined: dict[str, set[str]]) -> list[str]:
    return sorted(i for i in cited if i not in defined.get(i[0], set()))


def test_code_cites_the_behaviour_pages_not_the_outside_spec() -> None:
    """``src/``, ``tests/`` and ``benchmarks/`` cite docs/behaviour (``behaviour R2.24``); the specification
    they were written from is not in the repository, so a reader could not follow ``spec/review.md §2.24``."""
    found = [
        f"{_rel(path)}: {line}"
        for path in _code_files()
        for line in spec_citations(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not found, "cite docs/behaviour ids instead:\n" + "\n".join(found)


def test_every_cited_behaviour_id_has_its_section() -> None:
    defined = defined_ids()
    cited: dict[str, set[str]] = {}
    for path in [*_code_files(), *BEHAVIOUR_PAGES.values()]:
        for i in cited_ids(path.read_text(encoding="utf-8", errors="replace")):
            cited.setdefault(i, set()).add(_rel(path))
    missing = missing_ids(set(cited), defined)
    assert not missing, "no section for " + ", ".join(f"{i} (cited in {sorted(cited[i])[0]})" for i in missing)


def test_the_citation_checks_can_fail() -> None:
    assert spec_citations("(spec/review.md §1 step 20)")
    assert spec_citations("the adaptive cut (spec §2.24)")
    assert spec_citations('"exec §7 *.md only root-level"')
    assert spec_citations("gates 1-5 (§3.6 gate 1)")
    assert spec_citations("see ../shared/spec/exec.md")
    assert spec_citations("(behaviour R1 step 20, E3.6 gate 1); the README §3 traps") == []
    defined = {"R": {"R1", "R2.24"}, "E": {"E3.21.1"}}
    assert cited_ids("behaviour R1 step 20, R2.24 and E3.21.1; R15 and X-38 are not ids") == {
        "R1",
        "R2.24",
        "E3.21.1",
    }
    assert missing_ids(cited_ids("behaviour R1, R2.24, E3.21.1"), defined) == []
    assert missing_ids(cited_ids("behaviour R9.99 and P3.1"), defined) == ["P3.1", "R9.99"]
