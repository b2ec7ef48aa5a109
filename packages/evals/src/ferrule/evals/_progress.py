"""The progress bar of long dataset runs: runs done of the total, and failed runs so far (rich, on stderr)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from rich.console import Console

    from ._events import EvalEvent


class Progress:
    """Draws the bar from `case_end` events; rich redraws it from its own thread, off the event loop."""

    def __init__(self, total: int, *, console: Console | None = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn
        from rich.progress import MofNCompleteColumn
        from rich.progress import Progress as Bar
        from rich.progress import TextColumn
        from rich.progress import TimeElapsedColumn

        self.total = total
        self.done = 0
        self.failures = 0
        self._bar = Bar(
            TextColumn("[bold]eval[/bold]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs, {task.fields[failures]} failed"),
            TimeElapsedColumn(),
            console=console or Console(file=sys.stderr),
        )
        self._task: Any = self._bar.add_task("eval", total=total, failures=0)
        self._bar.start()

    def update(self, event: EvalEvent) -> None:
        """Count a finished run."""
        if event.kind != "case_end" or event.result is None:
            return
        self.done += 1
        if not event.result.passed:
            self.failures += 1
        self._bar.update(self._task, completed=self.done, failures=self.failures)

    def close(self) -> None:
        """Draw the final state and stop redrawing."""
        self._bar.stop()
