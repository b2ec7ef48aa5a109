"""The agent of `loop.py`, in its own module: the workflow module imports it passed through, so
the sandbox never builds it again (tools and schemas are built once, on the worker)."""

from __future__ import annotations

from ferrule.agent import Agent
from ferrule.agent.testing import TestModel


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


agent = Agent(TestModel(), tools=[add], name="adder")
