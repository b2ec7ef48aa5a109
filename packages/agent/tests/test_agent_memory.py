"""What an agent keeps in memory: an application that builds one per request pays it per agent."""

from __future__ import annotations

import gc
import tracemalloc

from ferrule.agent import Agent
from ferrule.agent.testing import TestModel


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_an_agent_with_one_tool_keeps_less_than_agno_does() -> None:
    model = TestModel()
    # What is derived once per function and model (the tool's schema) is there, as in an application.
    for _ in range(20):
        Agent(model, tools=[add])
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        agents = [Agent(model, tools=[add]) for _ in range(200)]
        kept = (tracemalloc.get_traced_memory()[0] - before) / len(agents)
    finally:
        tracemalloc.stop()
    # docs/performance.md, workload 10b: Agno 3.1 keeps 3.68 KiB per `Agent(model=..., tools=[add])`.
    assert kept < 3.68 * 1024, f"an agent keeps {kept / 1024:.2f} KiB"
