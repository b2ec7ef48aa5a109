"""MCP tools in a durable run: each call is an `mcp_request` step; loading servers runs inline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent.durable import Binding
from ferrule.agent.durable import bind
from ferrule.mcp import MCPCapabilityProvider
from ferrule.mcp import MCPServerInProcess
from tests.support.durable_engine import Engine

pytestmark = pytest.mark.anyio


async def test_mcp_calls_are_steps_and_the_loader_runs_inline(
    sdk_server: Any, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    math = MCPServerInProcess(
        sdk_server, id="math", allow_tools=["add"], namespace=True, on_event=events.append
    )
    steps = [("load_mcp_servers", {"servers": ["math"]}), ("math__add", {"a": 2, "b": 3})]
    engine = Engine()
    with bind(Binding("m-1"), engine):
        first = await Agent(scripted(steps), toolsets=[MCPCapabilityProvider([math])]).run("add 2 and 3")
    executed = list(engine.executed)
    assert [step.rsplit(".", 1)[0] if "mcp_request." in step else step for step in executed] == [
        "step.0.model_request",
        "step.1.model_request",
        "step.1.mcp_request",
        "step.2.model_request",
    ]
    # Replayed in a fresh agent: no step runs again, the loader runs inline, the result is the same.
    with bind(Binding("m-1"), engine):
        again = await Agent(scripted(steps), toolsets=[MCPCapabilityProvider([math])]).run("add 2 and 3")
    assert engine.executed == executed

    def shown(result: Any) -> list[tuple[str, Any]]:
        return [(part.tool_name, part.content) for part in results(result.all_messages())]

    assert shown(again) == shown(first)
    assert shown(first)[1][0] == "math__add"
    assert "5" in str(shown(first)[1][1])
