"""`MCPCapabilityProvider`: the model sees server names first; only selected servers start."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent.testing import AgentInfo
from ferrule.core.errors import UserError
from ferrule.core.messages import ToolReturnPart
from ferrule.mcp import MCPCapabilityProvider
from ferrule.mcp import MCPServerInProcess
from ferrule.mcp import MCPServerStdio

from .conftest import RAW

pytestmark = pytest.mark.anyio


async def test_servers_are_loaded_on_demand_and_only_selected_ones_start(
    sdk_server: Any, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    math = MCPServerInProcess(
        sdk_server,
        id="math",
        description="Arithmetic",
        allow_tools=["add"],
        namespace=True,
        on_event=events.append,
    )
    never = MCPServerStdio(
        sys.executable, [RAW], id="raw", description="Never needed", on_event=events.append
    )
    provider = MCPCapabilityProvider([math, never])
    seen: list[AgentInfo] = []
    model = scripted([("load_mcp_servers", {"servers": ["math"]}), ("math__add", {"a": 2, "b": 3})], seen)
    agent = Agent(model, toolsets=[provider])
    result = await agent.run("add 2 and 3")

    first, second, _ = ([t.name for t in info.function_tools] for info in seen)
    assert first == ["load_mcp_servers"]
    assert second == ["load_mcp_servers", "math__add"]
    load_tool = seen[0].function_tools[0]
    assert "- math: Arithmetic" in (load_tool.description or "")
    assert "- raw: Never needed" in (load_tool.description or "")
    assert load_tool.parameters_json_schema["properties"]["servers"]["items"]["enum"] == ["math", "raw"]

    loaded, added = results(result.all_messages())
    assert isinstance(loaded, ToolReturnPart)
    assert loaded.content == {"loaded": {"math": ["math__add"]}}
    assert added.content == {"result": 5}
    assert never.pid is None  # the unselected server was never started
    assert [e.server_id for e in events.of("connected")] == ["math"]

    # The selection lives in the history: a continued conversation still has the tools.
    seen.clear()
    follow = scripted([("math__add", {"a": 1, "b": 1})], seen)
    again = await agent.run("once more", message_history=result.all_messages(), model=follow)
    assert "math__add" in [t.name for t in seen[0].function_tools]
    assert results(again.new_messages())[0].content == {"result": 2}


async def test_unknown_or_unavailable_servers_are_reported_to_the_model(
    scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    broken = MCPServerStdio(sys.executable, [RAW, "--fail-start"], id="broken", max_connect_attempts=1)
    provider = MCPCapabilityProvider([broken])
    model = scripted([("load_mcp_servers", {"servers": ["broken"]})])
    result = await Agent(model, toolsets=[provider]).run("go")
    (loaded,) = results(result.all_messages())
    assert loaded.content == {"loaded": {}, "unavailable": {"broken": "unavailable"}}
    assert loaded.metadata == {"ferrule_mcp_loaded": []}


def test_duplicate_ids_are_refused(sdk_server: Any) -> None:
    with pytest.raises(UserError, match="two MCP servers have the id 'x'"):
        MCPCapabilityProvider(
            [MCPServerInProcess(sdk_server, id="x"), MCPServerInProcess(sdk_server, id="x")]
        )
