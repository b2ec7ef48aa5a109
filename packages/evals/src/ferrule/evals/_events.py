"""The lifecycle events of a dataset run, delivered to its hooks (and to the progress bar)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal
from typing import TypeAlias

import msgspec

from ._report import CaseResult
from ._report import Report

__all__ = ["EvalEvent", "EvalEventKind", "EvalHook"]

EvalEventKind: TypeAlias = Literal["run_start", "case_start", "case_end", "run_end"]
"""The lifecycle events of a dataset run."""


class EvalEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One lifecycle event of a dataset run, delivered to every hook in order."""

    kind: EvalEventKind
    """`run_start` (once), `case_start` / `case_end` (per case and repetition), `run_end` (once)."""
    total_runs: int
    """Cases times repetitions."""
    case_index: int | None = None
    """The case's index (case events)."""
    repetition: int | None = None
    """The repetition, 1-based (case events)."""
    case_name: str | None = None
    """The case's name (case events)."""
    result: CaseResult | None = None
    """The finished run (`case_end`)."""
    report: Report | None = None
    """The finished report (`run_end`)."""


EvalHook: TypeAlias = Callable[[EvalEvent], None]
"""A synchronous lifecycle hook; an exception from it stops the run and propagates unchanged."""
