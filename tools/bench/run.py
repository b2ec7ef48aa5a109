"""ferrule's benchmarks, side by side with PydanticAI (and openai-agents) in one run.

    hatch run bench:all      # the full run (a few minutes): writes tools/bench/results/latest.{md,json}
    hatch run bench:smoke    # one repetition of every workload at tiny sizes (CI; well under a minute);
                             # writes tools/bench/results/smoke.{md,json}

Options: `--only 3,4` runs some workloads, `--frameworks raw,ferrule` some frameworks (both write
results/partial.{md,json} instead), `--out DIR` writes elsewhere. What is measured and how is documented in docs/performance.md.

Every framework runs in processes of its own (`_worker.py`) against one mock server process
(`mock_server.py`), and every ratio is taken between numbers measured in this same run. A worker
that crashes or produces a wrong answer is a real error: the run still writes what it measured,
then exits 1. A peer that is not installed (openai-agents) is reported as n/a.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402

from tools.bench._common import UI_PIECES  # noqa: E402
from tools.bench._report import Row  # noqa: E402
from tools.bench._report import write_report  # noqa: E402

FRAMEWORKS = ("raw", "ferrule", "pydantic_ai", "openai_agents", "agno")
LABELS = {
    "raw": "raw floor",
    "ferrule": "ferrule",
    "pydantic_ai": "PydanticAI",
    "openai_agents": "openai-agents",
    "agno": "Agno",
}
_DISTRIBUTIONS = {
    "raw": ("httpx2", "msgspec"),
    "ferrule": ("ferrule-core", "ferrule-agent", "ferrule-openai", "ferrule-graph", "ferrule-ui"),
    "pydantic_ai": ("pydantic-ai-slim", "openai", "pydantic-graph"),
    "openai_agents": ("openai-agents", "openai"),
    "agno": ("agno",),
}


class Sizes(msgspec.Struct, frozen=True, kw_only=True):
    """How much of each workload one run does."""

    import_rounds: int
    """Fresh interpreters per import probe and framework."""
    reps: int
    """Samples per timed workload (median, min and max are over these)."""
    sample_ms: float
    """How long one sample should last; the number of runs in it follows from the warm-up."""
    warmup: int
    """Untimed runs before sampling (more for the microsecond workloads)."""
    deltas: tuple[int, int]
    concurrency: int
    concurrency_procs: int
    """Fresh processes for the concurrency workload (one sample each)."""
    history: tuple[int, int]
    long_history: tuple[int, int]
    """History lengths of workload 11 (one more step on a long history)."""
    loop_steps: int
    loop_reps: int
    parallel: int
    graph_steps: int
    """Steps of the linear graph (workload 9a)."""
    graph_branches: int
    """Branches of the fan-out (workload 9b)."""


FULL = Sizes(
    import_rounds=5,
    reps=7,
    sample_ms=100,
    warmup=5,
    deltas=(50, 1000),
    concurrency=1000,
    concurrency_procs=3,
    history=(200, 10_000),
    long_history=(1000, 10_000),
    loop_steps=128,
    loop_reps=5,
    parallel=32,
    graph_steps=100,
    graph_branches=64,
)
SMOKE = Sizes(
    import_rounds=1,
    reps=1,
    sample_ms=0,
    warmup=1,
    deltas=(50, 200),
    concurrency=20,
    concurrency_procs=1,
    history=(200, 1000),
    long_history=(100, 1000),
    loop_steps=8,
    loop_reps=1,
    parallel=32,
    graph_steps=10,
    graph_branches=8,
)

# Workload 1: what each framework's user imports to get going. The raw floor imports its client
# and codec, the two libraries every framework here is built on. openai-agents, a secondary peer
# whose import takes seconds, is measured on the complete import (1c) only.
IMPORTS: dict[str, tuple[str, dict[str, str]]] = {
    "1a": (
        "import the core package",
        {
            "raw": "import httpx2, msgspec",
            "ferrule": "import ferrule.core",
            "pydantic_ai": "import pydantic_ai",
        },
    ),
    "1b": (
        "import the agent",
        {
            "raw": "import httpx2, msgspec",
            "ferrule": "from ferrule.agent import Agent",
            "pydantic_ai": "from pydantic_ai import Agent",
        },
    ),
    "1c": (
        "import agent + OpenAI model and provider",
        {
            "raw": "import httpx2, msgspec",
            "ferrule": "from ferrule.agent import Agent\n"
            "from ferrule.providers.openai import OpenAIChatModel, OpenAIProvider\n"
            "OpenAIChatModel, OpenAIProvider",
            "pydantic_ai": "from pydantic_ai import Agent\n"
            "from pydantic_ai.models.openai import OpenAIChatModel\n"
            "from pydantic_ai.providers.openai import OpenAIProvider",
            "openai_agents": "from agents import Agent, Runner, OpenAIChatCompletionsModel\n"
            "from openai import AsyncOpenAI",
            "agno": "from agno.agent import Agent\nfrom agno.models.openai import OpenAIChat",
        },
    ),
    "1d": (
        "start the command: `ferrule --help`",
        {
            "ferrule": "import contextlib, io\n"
            "from ferrule.cli._main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    main(['--help'])",
        },
    ),
}

# RSS comes from /proc where there is one (importing psutil here would add to what is measured).
_IMPORT_PROBE = """\
import os, time
_t = time.perf_counter_ns()
{code}
_dt = time.perf_counter_ns() - _t
try:
    with open('/proc/self/statm', 'rb') as _f:
        _rss = int(_f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
except OSError:
    import resource, sys
    _rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == 'darwin' else 1024)
print(_dt, _rss)
"""


def _bytecode_env() -> dict[str, str]:
    """The environment of workload 1's interpreters: this one's, with bytecode writing allowed.

    Workload 1 measures imports with bytecode cached (as after `pip install`, or any first import
    that may write its cache): with `PYTHONDONTWRITEBYTECODE` set (this machine sets it), the
    untimed first import could leave no cache behind and every import would compile from source.
    """
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


class BenchError(Exception):
    """A worker failed or produced a wrong answer."""


def _installed(framework: str) -> str | None:
    """None when the framework can run here, else why not."""
    for dist in _DISTRIBUTIONS[framework]:
        try:
            importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return f"{dist} is not installed"
    return None


def _versions() -> dict[str, str]:
    names = sorted({d for ds in _DISTRIBUTIONS.values() for d in ds} | {"pydantic", "psutil", "anyio"})
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "commit": commit or "unknown",
    }


class MockServer:
    """The mock OpenAI-compatible server, in its own process."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "tools" / "bench" / "mock_server.py"), "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("READY "):
            self.process.kill()
            raise BenchError(f"the mock server did not start (said {line!r})")
        self.port = int(line.split()[1])

    def base(self, scenario: str = "base") -> str:
        """The API root of one scenario (see mock_server.py)."""
        return f"http://127.0.0.1:{self.port}/{scenario}/v1"

    def close(self) -> None:
        """Stop the server."""
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _worker(framework: str, specs: list[dict[str, Any]], timeout: float) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "tools.bench._worker", framework, msgspec.json.encode(specs).decode()]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise BenchError(
            f"{framework}: workers ran past {timeout:.0f} s on {[s['kind'] for s in specs]}"
        ) from exc
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-25:])
        raise BenchError(f"{framework} failed on {[s.get('id', s['kind']) for s in specs]}:\n{tail}")
    return msgspec.json.decode(done.stdout.strip().splitlines()[-1])


@dataclass
class Job:
    """One workload spec and where its result fields go: `{field: row}`."""

    spec: dict[str, Any]
    into: dict[str, Row]
    alone: bool = False
    """Run in a process of its own (in a full run), for memory or isolation."""


class Runner:
    """Runs workloads, collects rows, remembers errors."""

    def __init__(self, frameworks: list[str], sizes: Sizes, smoke: bool, out: Path) -> None:
        self.sizes = sizes
        self.smoke = smoke
        self.out = out
        self.rows: list[Row] = []
        self.errors: list[str] = []
        self.missing: dict[str, str] = {}
        self.frameworks: list[str] = []
        for framework in frameworks:
            reason = _installed(framework)
            if reason is None:
                self.frameworks.append(framework)
            else:
                self.missing[framework] = reason
        # A smoke run queues every job and runs each framework's jobs in one process at the end, so
        # it pays each framework's import once.
        self.queued: list[Job] = []
        # Alternating the order between workloads spreads slow drift of the machine evenly.
        self._flip = False

    def _order(self) -> list[str]:
        self._flip = not self._flip
        return list(self.frameworks) if self._flip else list(reversed(self.frameworks))

    def _row(self, row_id: str, title: str, unit: str, scale: float) -> Row:
        row = Row(id=row_id, title=title, unit=unit, scale=scale)
        for framework, reason in self.missing.items():
            row.na[framework] = reason
        self.rows.append(row)
        return row

    def run_jobs(self, jobs: list[Job]) -> None:
        """Run jobs for every framework: grouped jobs share a process per framework, `alone` jobs
        get one each. In a smoke run they are queued for `flush`."""
        if self.smoke:
            self.queued.extend(jobs)
            return
        grouped = [job for job in jobs if not job.alone]
        chunks = ([grouped] if grouped else []) + [[job] for job in jobs if job.alone]
        for framework in self._order():
            for chunk in chunks:
                self._run_chunk(framework, chunk)

    def flush(self) -> None:
        """Run the queued jobs, one process per framework."""
        jobs, self.queued = self.queued, []
        if jobs:
            for framework in self._order():
                self._run_chunk(framework, jobs)

    def _run_chunk(self, framework: str, chunk: list[Job]) -> None:
        try:
            results = _worker(framework, [job.spec for job in chunk], timeout=120 if self.smoke else 600)
        except BenchError as exc:
            self.errors.append(str(exc))
            for job in chunk:
                for row in job.into.values():
                    row.na[framework] = "error"
            return
        for job, result in zip(chunk, results, strict=True):
            for field, row in job.into.items():
                if "unsupported" in result:
                    row.na[framework] = result["unsupported"]
                else:
                    row.samples.setdefault(framework, []).extend(result[field])

    # -- workloads -----------------------------------------------------------------------------------

    def imports(self) -> None:
        """Workload 1: import time in fresh interpreters, bytecode cached, frameworks interleaved round by round."""
        # A smoke run checks the probe works with the largest import only: peers take seconds each.
        chosen = {"1c": IMPORTS["1c"]} if self.smoke else IMPORTS
        rows = {rid: self._row(rid, title, "ms", 1e-6) for rid, (title, _) in chosen.items()}
        rss_rows = {
            rid: self._row(f"{rid}\u2032", f"RSS after {title}", "MiB", 1 / 2**20)
            for rid, (title, _) in chosen.items()
        }
        for rid, (_, codes) in chosen.items():
            for fw in set(self.frameworks) - set(codes):
                why = "ferrule's command only" if rid == "1d" else "measured in 1c only"
                rows[rid].na[fw] = rss_rows[rid].na[fw] = why
        probes = {
            (rid, fw): _IMPORT_PROBE.format(code=code)
            for rid, (_, codes) in chosen.items()
            for fw, code in codes.items()
            if fw in self.frameworks
        }
        env = _bytecode_env()
        if not self.smoke:
            # One untimed import first, so bytecode caches exist and the disk cache is warm for all.
            for probe in set(probes.values()):
                subprocess.run(
                    [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, check=False
                )
        for _ in range(self.sizes.import_rounds):
            for (rid, fw), probe in probes.items():
                done = subprocess.run(
                    [sys.executable, "-c", probe],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    self.errors.append(f"{fw} import {rid} failed:\n{done.stderr.strip()[-2000:]}")
                    rows[rid].na[fw] = "error"
                    continue
                elapsed, resident = done.stdout.split()
                rows[rid].samples.setdefault(fw, []).append(float(elapsed))
                rss_rows[rid].samples.setdefault(fw, []).append(float(resident))

    def _timing(self, warmup: int | None = None) -> dict[str, Any]:
        s = self.sizes
        return {"reps": s.reps, "sample_ms": s.sample_ms, "warmup": warmup or s.warmup}

    def function_model(self) -> None:
        """Workload 2: the two-step run on a function model, no network."""
        base = {"kind": "fn_run", **self._timing(None if self.smoke else 50)}
        a = self._row("2a", "two-step run, FunctionModel", "µs/run", 1e-3)
        b = self._row("2b", "two-step run, FunctionModel, streamed", "µs/run", 1e-3)
        self.run_jobs(
            [
                Job(spec={**base, "stream": False}, into={"samples": a}),
                Job(spec={**base, "stream": True}, into={"samples": b}),
            ]
        )

    def end_to_end(self, server: MockServer) -> None:
        """Workload 3: sequential two-request tool runs against the mock server."""
        base = {"kind": "e2e", "base": server.base(), **self._timing()}
        jobs: list[Job] = []
        for rid, api, stream, title in (
            ("3a", "chat", False, "tool run, Chat Completions"),
            ("3b", "responses", False, "tool run, Responses"),
            ("3c", "chat", True, "tool run, Chat Completions, streamed"),
            ("3d", "responses", True, "tool run, Responses, streamed"),
        ):
            row = self._row(rid, title, "ms/run", 1e-6)
            jobs.append(Job(spec={**base, "api": api, "stream": stream}, into={"samples": row}))
        self.run_jobs(jobs)

    def streaming(self, server: MockServer) -> None:
        """Workload 4: one run streaming many text deltas."""
        jobs: list[Job] = []
        ids = iter("abcd")
        for api, label in (("chat", "Chat Completions"), ("responses", "Responses")):
            for deltas in self.sizes.deltas:
                spec = {
                    "kind": "stream_text",
                    "base": server.base(f"d{deltas}"),
                    "api": api,
                    "deltas": deltas,
                    **self._timing(),
                }
                row = self._row(f"4{next(ids)}", f"stream {deltas:,} deltas, {label}", "ms/run", 1e-6)
                jobs.append(Job(spec=spec, into={"samples": row}))
        self.run_jobs(jobs)

    def concurrency(self, server: MockServer) -> None:
        """Workload 5: many concurrent runs on one event loop, each repetition a fresh process."""
        s = self.sizes
        n = s.concurrency
        wall = self._row("5a", f"{n:,} concurrent tool runs, Chat Completions: wall", "ms", 1e-6)
        memory = self._row("5b", f"{n:,} concurrent tool runs: peak RSS growth", "MiB", 1 / 2**20)
        spec = {
            "kind": "concurrent",
            "base": server.base(),
            "api": "chat",
            "stream": False,
            "n": n,
            "warmup": 5,
        }
        for _ in range(s.concurrency_procs):
            self.run_jobs([Job(spec=spec, into={"samples": wall, "rss_growth": memory}, alone=True)])

    def history(self) -> None:
        """Workload 6: history round trips and decoding a PydanticAI-written history."""
        s = self.sizes
        titles = [f"history dump+load, {n:,} messages" for n in s.history]
        titles.append(f"decode a PydanticAI-written history, {s.history[1]:,} messages")
        rows = [self._row(f"6{i}", title, "ms", 1e-6) for i, title in zip("abc", titles, strict=True)]
        if "pydantic_ai" not in self.frameworks:
            for row in rows:
                for framework in self.frameworks:
                    row.na[framework] = "needs PydanticAI to write the history"
            return
        self.out.mkdir(parents=True, exist_ok=True)
        files = {n: self.out / f"history_{n}.json" for n in s.history}
        try:
            _worker("write_history", [{"n": n, "file": str(path)} for n, path in files.items()], timeout=300)
        except BenchError as exc:
            self.errors.append(str(exc))
            for row in rows:
                row.na.update(dict.fromkeys(self.frameworks, "error"))
            return
        jobs: list[Job] = []
        for row, n in zip(rows, s.history, strict=False):
            spec = {"kind": "history", "n": n, "file": str(files[n]), **self._timing(2)}
            jobs.append(Job(spec=spec, into={"samples": row}, alone=True))
        n = s.history[1]
        spec = {"kind": "decode_pai", "n": n, "file": str(files[n]), **self._timing(2)}
        jobs.append(Job(spec=spec, into={"samples": rows[2]}, alone=True))
        self.run_jobs(jobs)

    def scaling(self, server: MockServer) -> None:
        """Workload 7: step 1 vs step N of a long tool loop (a step: from one tool call to the next)."""
        s = self.sizes
        steps = s.loop_steps
        # N steps between tool calls need N + 1 tool calls.
        calls = steps + 1
        fn_spec = {"kind": "fn_loop", "steps": calls, "reps": s.loop_reps, "warmup": 2}
        net_spec = {
            "kind": "net_loop",
            "base": server.base(f"loop{calls}"),
            "api": "chat",
            "steps": calls,
            "reps": s.loop_reps,
            "warmup": 2,
        }
        jobs: list[Job] = []
        for prefix, label, spec in (("7a", "FunctionModel", fn_spec), ("7b", "Chat Completions", net_spec)):
            first = self._row(f"{prefix}1", f"tool loop, {label}: step 1", "µs/step", 1e-3)
            last = self._row(f"{prefix}2", f"tool loop, {label}: step {steps}", "µs/step", 1e-3)
            growth = self._row(f"{prefix}3", f"tool loop, {label}: step {steps} ÷ step 1", "\u00d7", 1.0)
            growth.derived = (first.id, last.id)
            jobs.append(Job(spec=spec, into={"samples": first, "last": last}))
        self.run_jobs(jobs)

    def parallel(self, server: MockServer) -> None:
        """Workload 8: one tool step with many parallel calls."""
        s = self.sizes
        spec = {
            "kind": "e2e",
            "base": server.base(f"par{s.parallel}"),
            "api": "chat",
            "stream": False,
            **self._timing(),
        }
        row = self._row("8a", f"tool step with {s.parallel} parallel calls", "ms/run", 1e-6)
        self.run_jobs([Job(spec=spec, into={"samples": row})])

    def graphs(self) -> None:
        """Workload 9: per-step overhead of a linear graph and per-branch overhead of a fan-out."""
        s = self.sizes
        jobs: list[Job] = []
        for rid, shape, size, title in (
            ("9a", "linear", s.graph_steps, f"graph: {s.graph_steps}-step linear graph, per step"),
            ("9b", "fan_out", s.graph_branches, f"graph: fan-out to {s.graph_branches} branches, per branch"),
        ):
            row = self._row(rid, title, "µs/step", 1e-3)
            spec = {"kind": "graph", "shape": shape, "size": size, **self._timing(None if self.smoke else 50)}
            jobs.append(Job(spec=spec, into={"samples": row}))
        self.run_jobs(jobs)

    def instantiation(self, server: MockServer) -> None:
        """Workload 10: building `Agent(model, tools=[add])` (time and the memory each agent
        keeps), and a new agent's first run on the function model of workload 2."""
        timing = self._timing(None if self.smoke else 200)
        spec = {"kind": "instantiate", "base": server.base(), "keep": 20 if self.smoke else 500, **timing}
        time_row = self._row("10a", "Agent(model, tools=[add])", "µs", 1e-3)
        memory_row = self._row("10b", "Agent(model, tools=[add]): memory kept per agent", "KiB", 1 / 1024)
        first = self._row(
            "10c", "new Agent(FunctionModel, tools=[add]) + its first two-step run", "µs/run", 1e-3
        )
        self.run_jobs(
            [
                Job(spec=spec, into={"samples": time_row, "memory": memory_row}),
                Job(spec={"kind": "first_run", **timing}, into={"samples": first}),
            ]
        )

    def long_history(self, server: MockServer) -> None:
        """Workload 11: one more step (a new run, Chat Completions) on a long history shared by every run."""
        jobs: list[Job] = []
        for rid, n in zip(("11a", "11b"), self.sizes.long_history, strict=True):
            spec = {"kind": "long_step", "base": server.base(), "n": n, **self._timing()}
            row = self._row(
                rid, f"one more step on a {n:,}-message history, Chat Completions", "ms/run", 1e-6
            )
            jobs.append(Job(spec=spec, into={"samples": row}))
        self.run_jobs(jobs)

    def ui_stream(self) -> None:
        """Workload 12: an AI SDK chat post to the run's UI message stream records (no HTTP)."""
        spec = {"kind": "ui_stream", "deltas": len(UI_PIECES), **self._timing(None if self.smoke else 50)}
        row = self._row(
            "12a",
            f"chat post to AI SDK UI stream records, tool call + {len(UI_PIECES)} deltas",
            "µs/run",
            1e-3,
        )
        self.run_jobs([Job(spec=spec, into={"samples": row})])


WORKLOADS: dict[int, Callable[[Runner, MockServer], None]] = {
    1: lambda r, _s: r.imports(),
    2: lambda r, _s: r.function_model(),
    3: Runner.end_to_end,
    4: Runner.streaming,
    5: Runner.concurrency,
    6: lambda r, _s: r.history(),
    7: Runner.scaling,
    8: Runner.parallel,
    9: lambda r, _s: r.graphs(),
    10: Runner.instantiation,
    11: Runner.long_history,
    12: lambda r, _s: r.ui_stream(),
}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks; return the process exit status."""
    parser = argparse.ArgumentParser(description="ferrule's benchmarks, side by side with PydanticAI.")
    parser.add_argument("--smoke", action="store_true", help="one repetition of every workload at tiny sizes")
    parser.add_argument("--only", default="", help="comma-separated workload numbers (default: all)")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="comma-separated frameworks")
    parser.add_argument("--out", type=Path, default=ROOT / "tools" / "bench" / "results")
    args = parser.parse_args(argv)
    frameworks = [f for f in args.frameworks.split(",") if f]
    unknown = set(frameworks) - set(FRAMEWORKS)
    if unknown:
        parser.error(f"unknown frameworks {sorted(unknown)}; choose from {', '.join(FRAMEWORKS)}")
    only = {int(w) for w in args.only.split(",") if w} or set(WORKLOADS)
    sizes = SMOKE if args.smoke else FULL
    started = time.monotonic()
    load_before = os.getloadavg()
    runner = Runner(frameworks, sizes, args.smoke, args.out)
    for framework, reason in runner.missing.items():
        print(f"note: {LABELS[framework]} is skipped: {reason}", file=sys.stderr)
    if "ferrule" in runner.missing or "raw" in runner.missing:
        runner.errors.append(
            f"ferrule's side cannot run: {runner.missing.get('ferrule') or runner.missing.get('raw')}"
        )
    server = MockServer()
    try:
        for number in sorted(only):
            step = time.monotonic()
            WORKLOADS[number](runner, server)
            if not args.smoke:
                print(f"workload {number}: {time.monotonic() - step:.1f} s", file=sys.stderr)
        runner.flush()
    finally:
        server.close()
    meta = {
        "mode": "smoke" if args.smoke else "full",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": _machine(),
        "versions": _versions(),
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "duration_s": round(time.monotonic() - started, 1),
        "sizes": msgspec.to_builtins(sizes),
        "skipped": runner.missing,
        "errors": runner.errors,
    }
    # Only a complete full run writes `latest`: a smoke run or a selection never overwrites it.
    partial = only != set(WORKLOADS) or set(frameworks) != set(FRAMEWORKS)
    name = "smoke" if args.smoke else ("partial" if partial else "latest")
    markdown = write_report(runner.rows, meta, args.out, name)
    print(markdown)
    for error in runner.errors:
        print(f"\nERROR: {error}", file=sys.stderr)
    return 1 if runner.errors else 0


__all__ = ["FULL", "SMOKE", "Sizes", "main"]

if __name__ == "__main__":
    sys.exit(main())
