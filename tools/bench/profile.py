"""Where one workload's runs go: `python -m tools.bench.profile 2b --framework ferrule --runs 200`.

Runs the harness's own runner (`fw_*.py`, the same workloads as `tools.bench.cpu`) under cProfile
against the mock server, after a warm-up, and prints the Python calls per run, the event-loop
iterations per run (calls of asyncio's `_run_once`, the number of times the loop polled), and the
functions that took the most time. Counts, unlike times, do not move with the machine's load: read
them first when comparing two commits (see `tools.bench.cpu` for how to put a commit's packages
first on `PYTHONPATH`).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib
import pstats
from typing import Any
from typing import cast

from tools.bench.cpu import WORKLOADS
from tools.bench.run import MockServer


def _loop_iterations(stats: pstats.Stats) -> int:
    # (`Stats.stats` and `total_calls` are set in `__init__` and missing from typeshed.)
    table = cast("dict[tuple[str, int, str], tuple[int, int, float, float, Any]]", vars(stats)["stats"])
    return sum(
        row[1]
        for (path, _, name), row in table.items()
        if name == "_run_once" and path.endswith("base_events.py")
    )


async def _profile(workload: str, framework: str, runs: int, sort: str, top: int) -> None:
    server = MockServer()
    try:
        bench: Any = importlib.import_module(f"tools.bench.fw_{framework}").Bench()
        method, arguments, _ = WORKLOADS[workload]
        fn = getattr(bench, method)(*arguments(server))
        for _ in range(max(20, runs // 10)):
            await fn()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(runs):
            await fn()
        profiler.disable()
        await bench.aclose()
    finally:
        server.close()
    stats = pstats.Stats(profiler)
    total_calls = cast("int", vars(stats)["total_calls"])
    print(f"{framework} {workload}: {total_calls / runs:,.0f} Python calls per run", flush=True)
    print(
        f"{framework} {workload}: {_loop_iterations(stats) / runs:,.1f} event-loop iterations per run",
        flush=True,
    )
    stats.sort_stats(sort).print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("workload", help=f"one of {', '.join(WORKLOADS)}")
    parser.add_argument(
        "--framework", default="ferrule", help="raw, ferrule, pydantic_ai, openai_agents, agno"
    )
    parser.add_argument("--runs", type=int, default=200, help="profiled runs (default 200)")
    parser.add_argument("--sort", default="tottime", help="pstats sort key (default tottime)")
    parser.add_argument("--top", type=int, default=30, help="functions to list (default 30)")
    args = parser.parse_args()
    if args.workload not in WORKLOADS:
        parser.error(f"unknown workload {args.workload!r}; choose from {', '.join(WORKLOADS)}")
    asyncio.run(_profile(args.workload, args.framework, args.runs, args.sort, args.top))


if __name__ == "__main__":
    main()
