"""CPU seconds per run of some workloads' runners: `python -m tools.bench.cpu 4a,4b --frameworks raw,ferrule`.

On a machine that other jobs load, wall time moves with them; the CPU time of the thread that runs
the loop (`time.thread_time`) much less. The runners are the harness's own (`fw_*.py`), against the
mock server in its own process (its CPU is not counted). Prints the median and the minimum of
`--reps` samples per workload, in µs per run, and for 4a/4b and 4c/4d the slope per delta.

To compare two commits, run it alternately with each commit's packages first on `PYTHONPATH`
(e.g. `git archive <commit> packages | tar -x -C /tmp/base`, then
`PYTHONPATH=$(ls -d /tmp/base/packages/*/src | paste -sd:)`), in the same environment.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

from tools.bench.run import MockServer

# workload: (framework method, its arguments given the server, runs per sample)
WORKLOADS: dict[str, tuple[str, Callable[[MockServer], tuple[Any, ...]], int]] = {
    "2a": ("fn_run", lambda s: (False,), 1000),
    "2b": ("fn_run", lambda s: (True,), 500),
    "3a": ("e2e", lambda s: (s.base(), "chat", False), 100),
    "3b": ("e2e", lambda s: (s.base(), "responses", False), 100),
    "3c": ("e2e", lambda s: (s.base(), "chat", True), 100),
    "3d": ("e2e", lambda s: (s.base(), "responses", True), 100),
    "4a": ("stream_text", lambda s: (s.base("d50"), "chat"), 200),
    "4b": ("stream_text", lambda s: (s.base("d1000"), "chat"), 20),
    "4c": ("stream_text", lambda s: (s.base("d50"), "responses"), 200),
    "4d": ("stream_text", lambda s: (s.base("d1000"), "responses"), 20),
    "11a": ("long_step", lambda s: (s.base(), 1000), 40),
    "11b": ("long_step", lambda s: (s.base(), 10000), 10),
    "12a": ("ui_stream", lambda s: (), 200),
}
_SLOPES = (("4a", "4b", "Chat Completions"), ("4c", "4d", "Responses"))


async def cpu_per_run(fn: Callable[[], Awaitable[Any]], runs: int, reps: int) -> tuple[float, float]:
    """The median and the minimum, over `reps` samples of `runs` calls each (after a warm-up), of
    the loop thread's CPU time per call of `fn`, in µs."""
    for _ in range(max(3, runs // 5)):
        await fn()
    samples: list[float] = []
    for _ in range(reps):
        gc.collect()
        start = time.thread_time()
        for _ in range(runs):
            await fn()
        samples.append((time.thread_time() - start) / runs * 1e6)
    return statistics.median(samples), min(samples)


async def _main(workloads: list[str], frameworks: list[str], reps: int) -> None:
    import importlib

    server = MockServer()
    try:
        for framework in frameworks:
            bench: Any = importlib.import_module(f"tools.bench.fw_{framework}").Bench()
            medians: dict[str, float] = {}
            for name in workloads:
                method, arguments, runs = WORKLOADS[name]
                fn = getattr(bench, method)(*arguments(server))
                median, least = await cpu_per_run(fn, runs, reps)
                medians[name] = median
                print(f"{framework:8s} {name}: {median:9.1f} µs/run CPU (min {least:.1f})", flush=True)
            for short, long, api in _SLOPES:
                if short in medians and long in medians:
                    per_delta = (medians[long] - medians[short]) / 950
                    print(f"{framework:8s} per delta, {api}: {per_delta:.2f} µs", flush=True)
            await bench.aclose()
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("workloads", help=f"comma-separated, from {', '.join(WORKLOADS)}")
    parser.add_argument("--frameworks", default="raw,ferrule", help="comma-separated: raw, ferrule")
    parser.add_argument("--reps", type=int, default=5, help="samples per workload (default 5)")
    args = parser.parse_args()
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {', '.join(WORKLOADS)}")
    asyncio.run(_main(workloads, args.frameworks.split(","), args.reps))


if __name__ == "__main__":
    main()
