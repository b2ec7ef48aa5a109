"""`ferrule eval`: run an evaluation dataset against an agent (a thin layer over `ferrule.evals`).

The agent comes from the same flags, configuration and spec as `ferrule run` (calls that need
approval are denied: an evaluation runs unattended). The report is printed as a table, written as
JSON and HTML on request, and compared with `--baseline`: the command exits 1 exactly when that
comparison is not regression-free.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio

from ferrule.core.install import install_hint

from ._exit import ExitCode
from ._exit import UsageError

__all__ = ["eval_command"]


async def _evaluate(args: argparse.Namespace) -> int:
    from ferrule.evals import EvaluatorRegistry
    from ferrule.evals import ExecutionOptions
    from ferrule.evals import compare_reports
    from ferrule.evals import load_report_file
    from ferrule.evals import run_dataset_file
    from ferrule.evals import save_report

    from ._files import atomic_write
    from ._run import open_agent
    from ._setup import build_setup

    setup = build_setup(args, default_approval="deny")
    # A baseline that cannot be read fails before any case runs.
    baseline = await anyio.to_thread.run_sync(load_report_file, args.baseline) if args.baseline else None
    options: dict[str, Any] = {}
    if args.repetitions is not None:
        options["repetitions"] = args.repetitions
    if args.concurrency is not None:
        options["max_concurrency"] = args.concurrency
    async with open_agent(setup) as resolved:
        report = await run_dataset_file(
            args.dataset, resolved.agent, EvaluatorRegistry(), options=ExecutionOptions(**options)
        )
    comparison = compare_reports(baseline, report) if baseline is not None else None
    report.print(comparison=comparison)
    if args.report_json:
        save_report(report, args.report_json)
    if args.html:
        report.to_html(args.html, comparison=comparison)
    if args.ci_json:
        if comparison is None:
            raise UsageError("--ci-json writes the comparison with --baseline; pass --baseline too")
        atomic_write(Path(args.ci_json), comparison.to_ci_json())
    if comparison is None:
        return int(ExitCode.OK)
    return int(ExitCode.OK) if comparison.regression_free() else int(ExitCode.FAILURE)


def eval_command(args: argparse.Namespace) -> int:
    """`ferrule eval`; returns the exit code (1 when the comparison with `--baseline` regressed)."""
    from ._run import report

    try:
        import ferrule.evals  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        sys.stderr.write(
            "ferrule: error: `ferrule eval` needs ferrule-evals, which is not installed: "
            + install_hint("ferrule-cli[evals]")
            + "\n"
        )
        return int(ExitCode.USAGE)
    try:
        if args.ci_json and not args.baseline:
            raise UsageError("--ci-json writes the comparison with --baseline; pass --baseline too")
        return anyio.run(_evaluate, args)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:
        return report(exc, None, sys.stderr)
