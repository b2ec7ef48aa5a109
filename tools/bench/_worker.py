"""One framework's workloads in a process of its own: `python -m tools.bench._worker FRAMEWORK SPECS`.

SPECS is a JSON list of workload objects (see `run.py`); the worker prints one JSON line, a list
with one `{"samples": [...], ...}` per spec in nanoseconds (or bytes), `{"unsupported": reason}`
where the framework has no equivalent, and exits non-zero with a traceback on a real error. Each framework's process imports only that framework, so
import side effects, garbage and memory of one never weigh on another.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import time
import tracemalloc
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.bench._common import TEXT
from tools.bench._common import Unsupported
from tools.bench._common import dumps
from tools.bench._common import peak_rss
from tools.bench._common import peak_rss_reset
from tools.bench._common import rss
from tools.bench._common import settle

FRAMEWORKS = {
    "raw": "tools.bench.fw_raw",
    "ferrule": "tools.bench.fw_ferrule",
    "pydantic_ai": "tools.bench.fw_pydantic_ai",
    "openai_agents": "tools.bench.fw_openai_agents",
    "agno": "tools.bench.fw_agno",
}


class WrongAnswer(AssertionError):
    """A framework's run did not produce what the workload must produce: the numbers would lie."""


def _check(framework: str, what: str, got: Any, expected: Any) -> None:
    if got != expected:
        raise WrongAnswer(f"{framework} {what}: expected {expected!r}, got {got!r}")


def _runs_per_sample(spec: dict[str, Any], warmup_ns: int, warmup_runs: int) -> int:
    """Enough runs that one sample lasts about `sample_ms` (the warm-up's mean predicts a run),
    so fast frameworks are not measured at the timer's resolution and slow ones do not take all day."""
    per_run = max(1, warmup_ns // max(1, warmup_runs))
    return max(1, min(spec.get("max_runs", 100_000), round(spec["sample_ms"] * 1e6 / per_run)))


async def _per_run(fn: Callable[[], Awaitable[Any]], spec: dict[str, Any]) -> list[float]:
    start = time.perf_counter_ns()
    for _ in range(spec["warmup"]):
        await fn()
    runs = _runs_per_sample(spec, time.perf_counter_ns() - start, spec["warmup"])
    samples: list[float] = []
    for _ in range(spec["reps"]):
        settle()
        start = time.perf_counter_ns()
        for _ in range(runs):
            await fn()
        samples.append((time.perf_counter_ns() - start) / runs)
    return samples


def _per_call(fn: Callable[[], Any], spec: dict[str, Any]) -> list[float]:
    start = time.perf_counter_ns()
    for _ in range(spec["warmup"]):
        fn()
    runs = _runs_per_sample(spec, time.perf_counter_ns() - start, spec["warmup"])
    samples: list[float] = []
    for _ in range(spec["reps"]):
        settle()
        start = time.perf_counter_ns()
        for _ in range(runs):
            fn()
        samples.append((time.perf_counter_ns() - start) / runs)
    return samples


def _retained(make: Callable[[], Any], spec: dict[str, Any]) -> list[float]:
    """Bytes each agent keeps allocated (tracemalloc), `spec["keep"]` agents alive at once per
    sample: what an application holding many agents pays per agent, after the warm-up (what a
    framework derives once per function or model is already there, as in a running application)."""
    keep = spec["keep"]
    samples: list[float] = []
    for _ in range(spec["reps"]):
        settle()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        agents = [make() for _ in range(keep)]
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        samples.append((after - before) / len(agents))
        del agents
    return samples


async def _measure(framework: str, bench: Any, spec: dict[str, Any]) -> dict[str, Any]:
    kind = spec["kind"]
    if kind == "fn_run":
        fn = bench.fn_run(spec["stream"])
        _check(framework, kind, await fn(), TEXT)
        return {"samples": await _per_run(fn, spec)}
    if kind == "e2e":
        fn = bench.e2e(spec["base"], spec["api"], spec["stream"])
        _check(framework, kind, await fn(), TEXT)
        return {"samples": await _per_run(fn, spec)}
    if kind == "long_step":
        long_step = getattr(bench, "long_step", None)
        if long_step is None:
            raise Unsupported("no comparable long-history step here yet")
        fn = long_step(spec["base"], spec["n"])
        _check(framework, kind, await fn(), TEXT)
        return {"samples": await _per_run(fn, spec)}
    if kind == "stream_text":
        fn = bench.stream_text(spec["base"], spec["api"])
        _check(framework, f"{kind} deltas", await fn(), spec["deltas"])
        return {"samples": await _per_run(fn, spec)}
    if kind == "ui_stream":
        fn = bench.ui_stream()
        _check(framework, f"{kind} text-delta records", await fn(), spec["deltas"])
        return {"samples": await _per_run(fn, spec)}
    if kind == "instantiate":
        make = bench.instantiate(spec["base"])
        _check(framework, f"{kind} gives an agent", make() is not None, True)
        return {"samples": _per_call(make, spec), "memory": _retained(make, spec)}
    if kind == "first_run":
        fn = bench.first_run()
        _check(framework, kind, await fn(), TEXT)
        return {"samples": await _per_run(fn, spec)}
    if kind == "concurrent":
        fn = bench.e2e(spec["base"], spec["api"], spec["stream"])
        _check(framework, kind, await fn(), TEXT)
        for _ in range(spec["warmup"]):
            await fn()
        settle()
        before = rss()
        peak_rss_reset()
        start = time.perf_counter_ns()
        outputs = await asyncio.gather(*(fn() for _ in range(spec["n"])))
        wall = time.perf_counter_ns() - start
        growth = max(0, peak_rss() - before)
        _check(framework, kind, set(outputs), {TEXT})
        return {"samples": [wall], "rss_growth": [growth]}
    if kind in ("fn_loop", "net_loop"):
        fn = bench.fn_loop(spec["steps"]) if kind == "fn_loop" else bench.net_loop(spec["base"], spec["api"])
        marks = await fn()
        _check(framework, f"{kind} tool calls", len(marks), spec["steps"])
        for _ in range(spec["warmup"] - 1):
            await fn()
        firsts: list[float] = []
        lasts: list[float] = []
        for _ in range(spec["reps"]):
            settle()
            marks = await fn()
            firsts.append(marks[1] - marks[0])
            lasts.append(marks[-1] - marks[-2])
        return {"samples": firsts, "last": lasts}
    if kind == "graph":
        fn = bench.graph(spec["shape"], spec["size"])
        _check(framework, f"{kind} {spec['shape']} output", await fn(), spec["size"])
        return {"samples": [s / spec["size"] for s in await _per_run(fn, spec)]}
    if kind == "history":
        data: bytes = spec["data"]
        value, round_trip = bench.history(data)
        again = round_trip(value)
        _check(framework, f"{kind} length", len(again), spec["n"])
        return {"samples": _per_call(lambda: round_trip(value), spec)}
    if kind == "decode_pai":
        data = spec["data"]
        decode = bench.decode_pydantic_ai(data)
        _check(framework, f"{kind} length", len(decode()), spec["n"])
        return {"samples": _per_call(decode, spec)}
    raise ValueError(f"unknown workload kind {kind!r}")


async def _main(framework: str, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    module = importlib.import_module(FRAMEWORKS[framework])
    try:
        bench = module.Bench()
    except Unsupported as exc:
        return [{"unsupported": str(exc)} for _ in specs]
    results: list[dict[str, Any]] = []
    try:
        for spec in specs:
            try:
                results.append(await _measure(framework, bench, spec))
            except Unsupported as exc:
                results.append({"unsupported": str(exc)})
    finally:
        await bench.aclose()
    return results


def main() -> None:
    """Run workloads for one framework and print their samples as one JSON line (a list)."""
    import msgspec

    framework, raw_specs = sys.argv[1], sys.argv[2]
    specs: list[dict[str, Any]] = msgspec.json.decode(raw_specs)
    if framework == "write_history":
        from tools.bench.fw_pydantic_ai import write_history

        for spec in specs:
            Path(spec["file"]).write_bytes(write_history(spec["n"]))
        print(dumps([{"samples": []} for _ in specs]))
        return
    for spec in specs:
        if "file" in spec:
            spec["data"] = Path(spec["file"]).read_bytes()
    print(dumps(asyncio.run(_main(framework, specs))))


if __name__ == "__main__":
    main()
