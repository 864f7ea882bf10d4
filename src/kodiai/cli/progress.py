"""Progress bars for the long-running offline commands (eval, calibrate), on stderr so ``--json`` output
stays parseable."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

Report = Callable[[int, int], None]


class Stages:
    """One bar per named stage, created on its first report (a stage that has nothing to do never shows)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._tasks: dict[str, TaskID] = {}

    def report(self, description: str) -> Report:
        """A ``(done, total)`` callback that moves the bar named ``description``."""

        def update(done: int, total: int) -> None:
            task = self._tasks.get(description)
            if task is None:
                task = self._tasks[description] = self._progress.add_task(description, total=total)
            self._progress.update(task, completed=done, total=total)

        return update


@contextmanager
def stage_progress(console: Console | None = None) -> Iterator[Stages]:
    """Bars on stderr; rich falls back to plain, final lines when stderr is not a terminal."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console or Console(stderr=True), transient=False) as progress:
        yield Stages(progress)
