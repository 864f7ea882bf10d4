"""`kodiai memory ...`: operate the learned-memory store (import, search, list, stats, purge-stale, retire).

The store is the LanceDB URI in ``--uri`` (``LEARNING_MEMORY_URI``, default ``./data/kodiai-memory.lance``);
the embedder is ``--provider`` (``EMBEDDING_PROVIDER``: auto, voyage, local, none; auto = Voyage when
``VOYAGE_API_KEY`` is set, else the local MiniLM model). Each provider has its own table (by vector size).
``list`` and ``stats`` read provenance from the knowledge DB (``--knowledge-db`` > ``KNOWLEDGE_DB_PATH`` >
``./data/kodiai-knowledge.db``), read-only.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from kodiai.storage.db_path import resolve_knowledge_db_path

if TYPE_CHECKING:  # the learning stack (LanceDB, numpy, the embedder) loads only when a command runs
    from kodiai.learning.embeddings import EmbeddingProvider
    from kodiai.learning.memory_store import LanceMemoryStore, MemoryStats
    from kodiai.learning.pipeline import RetrievalOutcome
    from kodiai.learning.provenance import HistoryEvent, MemoryProvenance
    from kodiai.learning.provenance_sources import ReadOnlyKnowledge
    from kodiai.learning.threshold.types import AdaptiveThresholdResult
    from kodiai.learning.types import LearningMemoryRecord

app = typer.Typer(
    help="Learned memory: import, search, list, stats, purge-stale, retire.", no_args_is_help=True
)



@app.callback()
def _memory(ctx: typer.Context) -> None:
    _command_logging(ctx)


def _command_logging(ctx: typer.Context) -> None:
    """Library log lines at ``LOG_LEVEL`` (default info) for this command, so the store's per-row debug
    lines ("Duplicate memory write skipped" on a re-import) stay silent. Only when nothing configured
    structlog yet (an unconfigured structlog prints every level); the defaults come back when the command
    ends, so an in-process caller is left as it was."""
    import structlog

    from kodiai.log import configure_logging

    if structlog.is_configured():
        return
    try:
        configure_logging(None, json=False)
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    ctx.call_on_close(structlog.reset_defaults)


DEFAULT_URI = "./data/kodiai-memory.lance"
IMPORT_BATCH = 256

UriOpt = Annotated[str, typer.Option("--uri", envvar="LEARNING_MEMORY_URI", help="LanceDB URI of the store.")]
ProviderOpt = Annotated[
    str,
    typer.Option("--provider", envvar="EMBEDDING_PROVIDER", help="Embedder: auto, voyage, local or none."),
]
VoyageKeyOpt = Annotated[
    str | None, typer.Option("--voyage-api-key", envvar="VOYAGE_API_KEY", hidden=True, show_default=False)
]
KnowledgeDbOpt = Annotated[
    str | None,
    typer.Option(
        "--knowledge-db",
        help="Knowledge DB for provenance, opened read-only (default: KNOWLEDGE_DB_PATH, "
        "else ./data/kodiai-knowledge.db; a missing default is skipped with a note).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


def _console() -> Console:
    return Console(width=120, soft_wrap=False, highlight=False)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(1)


def _provider(name: str, voyage_api_key: str | None) -> EmbeddingProvider:
    from kodiai.learning.embeddings import build_embedding_provider

    try:
        return build_embedding_provider(name, voyage_api_key=voyage_api_key)
    except ValueError as exc:
        raise _fail(str(exc)) from exc


def _store(uri: str, provider: EmbeddingProvider, *, mark_stale: bool = True) -> LanceMemoryStore:
    from kodiai.learning.setup import open_store_for_provider

    try:
        store = open_store_for_provider(uri, provider, mark_stale=mark_stale)
    except (ValueError, OSError) as exc:
        raise _fail(str(exc)) from exc
    if store is None:
        raise _fail("the 'none' embedding provider has no memory store; choose --provider local or voyage")
    return store


@app.command("import")
def import_memories(
    file: Annotated[
        Path,
        typer.Argument(
            help="JSONL, one object per line: a memory record (repo, findingId, reviewId, findingText, "
            "severity, category, filePath, outcome; optional owner, sourceRepo, createdAt, text) or a "
            "labelled-corpus finding (id, repo, finding_text, file_path, category, severity, created_at)."
        ),
    ],
    uri: UriOpt = DEFAULT_URI,
    provider_name: ProviderOpt = "auto",
    voyage_api_key: VoyageKeyOpt = None,
) -> None:
    r"""Embed and store memories. Every line is checked first: one bad line aborts with nothing written
    (exit 1), and every error is listed with its line number and field.

    A record line is a learned memory as the server writes it (camelCase or snake_case keys); `text` is
    what is embedded (default: "\[severity] \[category]", the finding text and "File: path" on three
    lines). severity is one of critical, major, medium, minor, unknown; category one of security,
    correctness, performance, style, documentation; outcome one of accepted, suppressed, thumbs_up,
    thumbs_down; another value is an error that names the closest allowed one. A corpus line (the eval
    sets' corpus.jsonl) becomes an `accepted` memory with a stable finding id derived from its `id`, so
    importing the same corpus twice skips what is there.
    """
    from kodiai.learning.memory_import import ImportLineError, parse_import_line

    if not file.is_file():
        raise _fail(f"no such file: {file}")
    provider = _provider(provider_name, voyage_api_key)
    rows: list[tuple[LearningMemoryRecord, str]] = []
    errors: list[str] = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(
                parse_import_line(line, embedding_model=provider.model, embedding_dim=provider.dimensions)
            )
        except ImportLineError as exc:
            errors.append(f"line {number}: {exc}")
    if errors:
        for error in errors:
            typer.echo(error, err=True)
        raise _fail(f"{len(errors)} invalid line(s) in {file}; nothing was imported")
    store = _store(uri, provider)
    written = skipped = failed = 0
    console = _console()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(f"Embedding with {provider.model}", total=len(rows))
        for start in range(0, len(rows), IMPORT_BATCH):
            batch = rows[start : start + IMPORT_BATCH]
            vectors = provider.generate_many([text for _, text in batch], "document")
            ok = [(rec, vec) for (rec, _), vec in zip(batch, vectors, strict=True) if vec is not None]
            failed += len(batch) - len(ok)
            if ok:
                ids = store.write_memories([rec for rec, _ in ok], [vec for _, vec in ok])
                written += sum(1 for i in ids if i is not None)
                skipped += sum(1 for i in ids if i is None)
            progress.advance(task, len(batch))
    console.print(f"Imported {written} memories ({skipped} duplicates skipped, {failed} failed to embed).")
    if failed:
        raise typer.Exit(1)


_HEADGAP_REASONS = {
    "headgap:gap": "a clear relative gap in the head of the list: keep what lies before it",
    "headgap:band": "no clear gap: keep the results in the band around the best match",
    "headgap:abstain": "the best match is beyond the model's abstain gate: nothing is relevant",
    "headgap:empty": "no candidates",
}


def _threshold_reason(t: AdaptiveThresholdResult, adaptive: bool, configured: float) -> str:
    if not adaptive:
        return f"adaptive off: the configured threshold {configured} as is"
    method = t.method.removesuffix("+lexical")
    if method in _HEADGAP_REASONS:
        fused = " (on the fused vector + lexical score)" if method != t.method else ""
        return _HEADGAP_REASONS[method] + fused
    if t.method == "configured" and t.candidate_count == 0:
        return "no candidates: the configured threshold, clamped"
    if t.method == "percentile":
        return f"{t.candidate_count} candidates (< 8): the 75th-percentile distance, clamped to [0.15, 0.65]"
    if t.method == "configured":
        return f"largest gap {t.gap_size:.4f} < 0.05: no natural cut, the configured threshold, clamped"
    return f"largest gap {t.gap_size:.4f} before candidate #{t.gap_index}: cut just below it, clamped"


def channels_line(out: RetrievalOutcome, lexical_wanted: bool) -> str:
    """Which channels answered, and why the lexical one did not when it did not."""
    if out.quality.channels == "vector+lexical":
        return (
            f"Channels: vector+lexical ({out.quality.lexical_candidates} candidate(s) found by the lexical "
            "channel alone)"
        )
    if lexical_wanted:
        return "Channels: vector (the lexical channel failed, see the warning above)"
    return "Channels: vector (the lexical channel is off or the cut does not use it)"


def _print_search(
    console: Console, out: RetrievalOutcome, adaptive: bool, configured: float, lexical_wanted: bool
) -> None:
    console.print(channels_line(out, lexical_wanted))
    scores = out.lexical
    candidates = Table(title=f"1. Candidates from isolation ({len(out.candidates)})")
    for column in ("#", "memory", "repo", "finding", "file", "distance", *(("BM25",) if scores else ())):
        candidates.add_column(column)
    for i, c in enumerate(out.candidates, start=1):
        candidates.add_row(
            str(i),
            str(c.memory_id),
            c.record.repo,
            str(c.record.finding_id),
            c.record.file_path,
            f"{c.distance:.4f}",
            *((f"{scores.get(c.memory_id, 0.0):.3f}",) if scores else ()),
        )
    console.print(candidates)
    adjusted = Table(title="2. After language rerank and recency weighting")
    for column in ("#", "memory", "distance", "adjusted", "language match", "created"):
        adjusted.add_column(column)
    for i, r in enumerate(out.reranked, start=1):
        adjusted.add_row(
            str(i),
            str(r.memory_id),
            f"{r.distance:.4f}",
            f"{r.adjusted_distance:.4f}",
            "yes" if r.language_match else "no",
            r.record.created_at or "",
        )
    console.print(adjusted)
    t = out.threshold
    console.print(
        f"3. Threshold: {t.threshold:.4f} (method {t.method}) - {_threshold_reason(t, adaptive, configured)}"
    )
    if out.ambiguity is not None:
        a = out.ambiguity
        console.print(
            f"   Ambiguity: {a.cluster_size} of {a.pool_size} candidates cluster around the best"
            + (" (ambiguous)" if a.ambiguous else "")
        )
    final = Table(title=f"4. Final results ({len(out.results)})")
    for column in ("#", "memory", "repo", "severity", "finding", "adjusted", "confidence"):
        final.add_column(column)
    labels = out.confidence or []
    for i, r in enumerate(out.results, start=1):
        final.add_row(
            str(i),
            str(r.memory_id),
            r.record.repo,
            r.record.severity,
            r.record.finding_text,
            f"{r.adjusted_distance:.4f}",
            labels[i - 1] if i - 1 < len(labels) else "",
        )
    console.print(final)


@app.command("search")
def search(
    text: Annotated[str, typer.Argument(help="Query text (as a PR title/summary would be).")],
    repo: Annotated[str, typer.Option("--repo", help="Repository (owner/name).")],
    uri: UriOpt = DEFAULT_URI,
    provider_name: ProviderOpt = "auto",
    voyage_api_key: VoyageKeyOpt = None,
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=20)] = 5,
    threshold: Annotated[float, typer.Option("--threshold", min=0.0, max=2.0)] = 0.3,
    adaptive: Annotated[bool, typer.Option("--adaptive/--no-adaptive")] = True,
    sharing: Annotated[
        bool, typer.Option("--sharing/--no-sharing", help="Include the owner's repos.")
    ] = False,
    languages: Annotated[str, typer.Option("--languages", help="PR languages, comma-separated.")] = "",
    cut_strategy: Annotated[
        str | None,
        typer.Option(
            "--cut-strategy",
            help="maxgap (the original's) or headgap; default: the embedding model's calibration profile.",
        ),
    ] = None,
    lexical: Annotated[
        bool,
        typer.Option(
            "--lexical/--no-lexical",
            help="Also run the lexical channel (BM25 over finding text and file path) when the cut uses "
            "it, as reviews do.",
        ),
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Run the whole retrieval chain (as a review does) and print every stage and the channels that answered."""
    from kodiai.learning.confidence import ConfidenceConfig
    from kodiai.learning.isolation import IsolationLayer
    from kodiai.learning.lexical import LexicalChannel
    from kodiai.learning.memory_schema import InvalidNameError, validate_repo
    from kodiai.learning.pipeline import retrieve
    from kodiai.learning.retrieval_options import RetrievalOptions, RetrievalQuery
    from kodiai.learning.threshold.profiles import resolve_cut

    try:
        validate_repo(repo)
    except InvalidNameError as exc:
        raise _fail(str(exc)) from exc
    provider = _provider(provider_name, voyage_api_key)
    try:
        cut = resolve_cut(provider.model, cut_strategy)
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    store = _store(uri, provider)
    query = provider.generate(text, "query")
    if query is None:
        raise _fail(f"embedding the query with {provider.model} failed (see the warning above)")
    options = RetrievalOptions(
        top_k=top_k,
        distance_threshold=threshold,
        adaptive=adaptive,
        sharing_enabled=sharing,
        cut=cut,
        confidence=ConfidenceConfig(),
    )
    out = retrieve(
        IsolationLayer(store),
        query,
        RetrievalQuery(
            repo=repo,
            owner=repo.split("/")[0],
            pr_languages=[lang.strip() for lang in languages.split(",") if lang.strip()],
            text=text,
        ),
        options,
        lexical=LexicalChannel(store) if lexical else None,
    )
    if as_json:
        typer.echo(json.dumps(out.model_dump(mode="json"), indent=2))
        return
    _print_search(_console(), out, adaptive, threshold, lexical and adaptive and cut.uses_lexical)


def _knowledge(db: str | None) -> tuple[ReadOnlyKnowledge | None, str | None]:
    """The knowledge DB read-only, or ``(None, note)`` when the default path has no file. A path given
    with ``--knowledge-db`` or ``KNOWLEDGE_DB_PATH`` that does not exist is an error: never created."""
    from kodiai.learning.provenance_sources import ReadOnlyKnowledge

    url = os.environ.get("DATABASE_URL", "").strip()
    if db is None and url:  # the server keeps the knowledge tables in PostgreSQL
        return _postgres_knowledge(url)
    path, source = resolve_knowledge_db_path(db, os.environ)
    if not Path(path).is_file():
        if source == "default":
            return None, (
                f"Note: no knowledge DB at {path} (the default): provenance (PR, comment URL, reactions, "
                "who added or retired) is not shown; use --knowledge-db or KNOWLEDGE_DB_PATH."
            )
        via = "--knowledge-db" if source == "arg" else "KNOWLEDGE_DB_PATH"
        raise _fail(f"no knowledge DB found at {path} (resolved via {via}); nothing was created")
    try:
        knowledge = ReadOnlyKnowledge(path)
    except sqlite3.Error as exc:
        raise _fail(f"cannot read the knowledge DB at {path}: {exc}") from exc
    missing = knowledge.missing
    note = (
        f"Note: the knowledge DB at {path} lacks {', '.join(missing)}: run `kodiai db upgrade`."
        if missing
        else None
    )
    return knowledge, note


def _note(note: str | None) -> None:
    """Notes go to stderr so ``--json`` output stays parseable."""
    if note:
        typer.echo(note, err=True)


@app.command("stats")
def stats(
    uri: UriOpt = DEFAULT_URI,
    provider_name: ProviderOpt = "auto",
    voyage_api_key: VoyageKeyOpt = None,
    knowledge_db: KnowledgeDbOpt = None,
    as_json: JsonOpt = False,
    ann: Annotated[
        bool,
        typer.Option(
            "--ann",
            help="Also build each repo's in-memory ANN index as the server does at start-up (seconds to "
            "minutes per large repo) and show how it was chosen: structure, breadth, recall@20 (95 % lower "
            "bound).",
        ),
    ] = False,
) -> None:
    """Counts per repo (with outcomes, and retired findings from the knowledge DB) and per embedding model."""
    from kodiai.learning.provenance import retired_by_repo

    provider = _provider(provider_name, voyage_api_key)
    store = _store(uri, provider, mark_stale=False)
    if ann:
        store.warm()
    s = store.stats()
    knowledge, note = _knowledge(knowledge_db)
    retired: dict[str, int] | None = None
    if knowledge is not None:
        try:
            retired = retired_by_repo(knowledge.list_memory_governance())
        finally:
            knowledge.close()
    _note(note)
    if as_json:
        out = {
            **s.model_dump(),
            "retired_by_repo": retired,
            "knowledge_db": knowledge.path if knowledge else None,
        }
        typer.echo(json.dumps(out, indent=2))
        return
    console = _console()
    console.print(
        f"Learned memory at {uri}: {s.total} memories ({s.stale} stale), {s.dimensions} dims, "
        f"ANN index: {'yes' if s.indexed else 'no (exact search)'}"
    )
    outcomes = ("accepted", "suppressed", "thumbs_up", "thumbs_down")
    repos = Table(title="By repository (outcomes of live memories; retired: findings forgotten from GitHub)")
    for column in ("repo", "memories", *outcomes, "retired"):
        repos.add_column(column, justify="left" if column == "repo" else "right")
    for name in [*s.by_repo, *sorted(set(retired or {}) - set(s.by_repo))]:
        counts = s.by_repo_outcome.get(name, {})
        repos.add_row(
            name,
            str(s.by_repo.get(name, 0)),
            *(str(counts.get(o, 0)) for o in outcomes),
            "-" if retired is None else str(retired.get(name, 0)),
        )
    console.print(repos)
    models = Table(title="By embedding model")
    models.add_column("model")
    models.add_column("memories", justify="right")
    for name, count in s.by_model.items():
        models.add_row(name, str(count))
    console.print(models)
    if s.ann:
        _print_ann(console, s)
    elif not ann:
        console.print(
            "In-memory ANN indexes: not built by this command (--ann builds them as the server does)"
        )


def _print_ann(console: Console, s: MemoryStats) -> None:
    """How each large repo's in-memory index was chosen (``--ann``)."""
    table = Table(
        title="In-memory ANN index per repository (chosen at build by the 95 % lower confidence bound of "
        "recall@20 over the calibration query families)"
    )
    columns = ("repo", "rows", "setting", "recall@20 (95 % lower bound)", "p50 ms", "exact p50 ms", "build s")
    for column in columns:
        table.add_column(column, justify="left" if column in ("repo", "setting") else "right")
    for name, report in s.ann.items():
        table.add_row(
            name,
            str(report.rows),
            report.setting,
            "-" if report.recall is None else f"{report.recall:.3f}",
            "-" if report.p50_ms is None else f"{report.p50_ms:.2f}",
            "-" if report.exact_p50_ms is None else f"{report.exact_p50_ms:.2f}",
            f"{report.build_seconds:.1f}",
        )
    console.print(table)


_REACTIONS = {"+1": "👍", "-1": "👎"}


def _event_line(e: HistoryEvent) -> str:
    at = e.at or "(time unknown)"
    if e.kind == "outcome":
        return f"{at}  memory #{e.memory_id} {e.outcome}"
    if e.kind == "reaction":
        return f"{at}  {_REACTIONS.get(e.reaction or '', e.reaction)} by {e.actor}"
    if e.kind == "remembered":
        return f"{at}  remembered by {e.actor}" + (f" ({e.comment_url})" if e.comment_url else "")
    if e.kind == "held":
        return f"{at}  held back: PR author {e.actor} has {e.how} access"
    if e.kind in ("confirmed", "discarded"):
        return f"{at}  {e.kind} by {e.actor or '(unknown)'} ({e.how})"
    return f"{at}  retired by {e.actor} ({e.removed} row(s) removed)" + (
        f" ({e.comment_url})" if e.comment_url else ""
    )


def _entry_lines(e: MemoryProvenance) -> list[str]:
    ids = ", ".join(f"#{i}" for i in e.memory_ids) or "-"
    head = f"memory {ids} · {e.repo} · {e.status}"
    lines = [head + (f" · {', '.join(e.outcomes)}" if e.outcomes else "")]
    where = f" on PR #{e.pr_number}" if e.pr_number is not None else ""
    if e.finding_id is not None:
        lines.append(f"  finding {e.finding_id}{where}" + (f"  {e.comment_url}" if e.comment_url else ""))
    elif e.added_by is not None:
        lines.append(
            f"  added by {e.added_by} at {e.added_at}{where}"
            + (f"  {e.comment_url}" if e.comment_url else "")
        )
    else:
        lines.append("  added by hand (no provenance recorded)")
    kind = "/".join(x for x in (e.severity, e.category) if x)
    text = (
        (f"[{kind}] " if kind else "") + (f"{e.file_path}: " if e.file_path else "") + (e.finding_text or "")
    )
    lines.append(f"  {text}")
    feedback = f" · 👍 {e.thumbs_up} 👎 {e.thumbs_down}" if e.thumbs_up or e.thumbs_down else ""
    lines.append(f"  created {e.created_at or '(unknown)'}{feedback}")
    if e.retired_by is not None:
        lines.append(f"  retired by {e.retired_by} at {e.retired_at} ({e.removed} row(s) removed)")
    if e.confirmed_by is not None or e.confirmed_how is not None:
        lines.append(
            f"  confirmed by {e.confirmed_by or '(unknown)'} ({e.confirmed_how}) at {e.confirmed_at}"
        )
    if e.history:
        lines.append("  history:")
        lines.extend(f"    {_event_line(h)}" for h in e.history)
    return lines


@app.command("list")
def list_memories(
    repo: Annotated[str | None, typer.Option("--repo", help="Only this repository (owner/name).")] = None,
    uri: UriOpt = DEFAULT_URI,
    provider_name: ProviderOpt = "auto",
    voyage_api_key: VoyageKeyOpt = None,
    knowledge_db: KnowledgeDbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Every memory with its provenance: repo, PR, comment URL, outcome history, who added or retired it."""
    from kodiai.learning.memory_schema import InvalidNameError, validate_repo
    from kodiai.learning.provenance import assemble, load_facts
    from kodiai.learning.provenance_sources import open_existing_store

    if repo is not None:
        try:
            validate_repo(repo)
        except InvalidNameError as exc:
            raise _fail(str(exc)) from exc
    provider = _provider(provider_name, voyage_api_key)
    if provider.dimensions <= 0:
        raise _fail("the 'none' embedding provider has no memory store; choose --provider local or voyage")
    try:
        store = open_existing_store(uri, provider)
    except (ValueError, OSError) as exc:
        raise _fail(str(exc)) from exc
    records = store.list_records(repo) if store is not None else []
    knowledge, note = _knowledge(knowledge_db)
    try:
        facts = load_facts(knowledge, records, repo) if knowledge is not None else None
    finally:
        if knowledge is not None:
            knowledge.close()
    entries = assemble(records, facts)
    notes = [n for n in (note,) if n]
    if store is None:
        notes.append(f"Note: {uri} has no memory table for {provider.model} ({provider.dimensions} dims).")
    for n in notes:
        _note(n)
    if as_json:
        out = {
            "uri": uri,
            "model": provider.model,
            "knowledge_db": knowledge.path if knowledge is not None else None,
            "notes": notes,
            "entries": [e.model_dump() for e in entries],
        }
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    counts = ", ".join(
        f"{sum(1 for e in entries if e.status == s)} {s}"
        for s in ("live", "stale", "retired", "absent", "pending", "discarded")
        if any(e.status == s for e in entries)
    )
    # Plain lines, not rich: URLs and finding texts must not be wrapped or read as markup.
    typer.echo(
        f"Learned memory at {uri} ({provider.model}); knowledge DB: "
        f"{knowledge.path if knowledge is not None else 'none'}. {len(entries)} entries"
        + (f" ({counts})" if counts else "")
    )
    for entry in entries:
        typer.echo("\n" + "\n".join(_entry_lines(entry)))


@app.command("purge-stale")
def purge_stale(
    uri: UriOpt = DEFAULT_URI,
    provider_name: ProviderOpt = "auto",
    voyage_api_key: VoyageKeyOpt = None,
) -> None:
    """Mark memories of any other embedding model stale, then delete every stale memory."""
    provider = _provider(provider_name, voyage_api_key)
    # Each step is one LanceDB update or delete over the whole table (seconds on a large store): the
    # progress shows which step runs and for how long; there is no finer unit to count.
    columns = (SpinnerColumn(), TextColumn("{task.description}"), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=False) as progress:
        task = progress.add_task(f"Opening {uri}", total=3)
        store = _store(uri, provider, mark_stale=False)
        progress.update(
            task, advance=1, description=f"Marking memories not embedded by {provider.model} stale"
        )
        marked = store.mark_stale(provider.model)
        progress.update(task, advance=1, description="Deleting stale memories")
        purged = store.purge_stale_embeddings()
        progress.update(task, advance=1, description="Purged stale memories")
    _console().print(
        f"Marked {marked} stale (model is not {provider.model}); purged {purged} stale memories."
    )


@app.command("compact")
def compact(
    uri: UriOpt = DEFAULT_URI,
    provider_name: ProviderOpt = "auto",
    voyage_api_key: VoyageKeyOpt = None,
) -> None:
    """Compact the store once: merge small fragments, bring its indexes up to date, delete table versions
    older than 6 hours. For a memory several processes write (s3://…) where no periodic job does it
    (without DATABASE_URL): run it from cron, e.g. hourly."""
    from kodiai.learning.memory_compaction import compact_memory

    store = _store(uri, _provider(provider_name, voyage_api_key), mark_stale=False)
    compact_memory(store)
    _console().print(f"Compacted {uri}: {store.count()} memories.")


@app.command("retire")
def retire(
    repo: Annotated[str, typer.Option("--repo", help="Repository (owner/name).")],
    finding: Annotated[int, typer.Option("--finding", help="The finding id (GitHub review comment id).")],
    outcome: Annotated[str | None, typer.Option("--outcome", help="Only this outcome.")] = None,
    actor: Annotated[
        str | None,
        typer.Option(
            "--actor", help="Who asked (recorded as cli:<actor>; default: $USER).", show_default=False
        ),
    ] = None,
    uri: UriOpt = DEFAULT_URI,
    provider_name: ProviderOpt = "auto",
    voyage_api_key: VoyageKeyOpt = None,
    knowledge_db: Annotated[
        str | None,
        typer.Option(
            "--knowledge-db",
            help="Knowledge DB where the retirement is recorded (default: KNOWLEDGE_DB_PATH, else "
            "./data/kodiai-knowledge.db; skipped with a note when that file does not exist).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Remove one finding's memory so it is never retrieved again (recorded like `@kodiai forget`)."""
    from kodiai.learning.memory_schema import InvalidNameError

    provider = _provider(provider_name, voyage_api_key)
    store = _store(uri, provider, mark_stale=False)
    try:
        removed = store.retire(repo, finding, outcome)
    except InvalidNameError as exc:
        raise _fail(str(exc)) from exc
    if removed == 0:
        raise _fail(f"no memory for finding {finding} in {repo}")
    _console().print(f"Retired {removed} memory(ies) of finding {finding} in {repo}.")
    if outcome is None:
        _record_cli_forget(
            knowledge_db, repo, finding, removed, actor or os.environ.get("USER") or "operator"
        )


def _postgres_knowledge(url: str) -> tuple[ReadOnlyKnowledge | None, str | None]:
    """The knowledge tables of ``DATABASE_URL`` (named by host and database only), read-only."""
    from kodiai.learning.provenance_sources import ReadOnlyKnowledge
    from kodiai.storage.database import is_postgres_url, safe_url
    from kodiai.storage.opening import open_postgres

    if not is_postgres_url(url):
        raise _fail("DATABASE_URL: must be a postgresql://user:password@host:port/database URL")
    try:
        knowledge = ReadOnlyKnowledge(open_postgres(url, "knowledge"))
    except Exception as exc:
        raise _fail(f"cannot read the knowledge tables in {safe_url(url)}: {type(exc).__name__}") from None
    missing = knowledge.missing
    note = (
        f"Note: the knowledge tables in {safe_url(url)} lack {', '.join(missing)}: run `kodiai db upgrade`."
        if missing
        else None
    )
    return knowledge, note


def _record_cli_forget(db: str | None, repo: str, finding: int, removed: int, actor: str) -> None:
    """A whole-finding retirement joins the governance log, so `memory list` shows who retired it and
    feedback sync never writes it back."""
    from kodiai.storage.knowledge import KnowledgeStore
    from kodiai.storage.knowledge_models import MemoryGovernanceRecord

    url = os.environ.get("DATABASE_URL", "").strip()
    if db is None and url:  # the server keeps the governance log in PostgreSQL
        target = url
    else:
        path, source = resolve_knowledge_db_path(db, os.environ)
        if not Path(path).is_file():
            if source != "default":
                raise _fail(f"no knowledge DB found at {path}; the memory was retired but not recorded")
            typer.echo(f"Note: no knowledge DB at {path}; the retirement is not recorded.", err=True)
            return
        target = path
    store = KnowledgeStore(target)
    try:
        store.record_memory_governance(
            MemoryGovernanceRecord(
                repo=repo, action="forget", actor=f"cli:{actor}", finding_id=finding, removed=removed
            )
        )
    finally:
        store.close()
