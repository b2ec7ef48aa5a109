"""Tool lists checked tool by tool, and JSON-RPC error -32000 told apart from a closed connection.

-32000 is both the code the SDK gives its own closed-connection signal and the first
implementation-defined server error of JSON-RPC, which many servers answer any failure with.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent.testing import AgentInfo
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.url_policy import UrlPolicy
from ferrule.mcp import MCPConnectionLostError
from ferrule.mcp import MCPServerHTTP
from ferrule.mcp import MCPServerInProcess
from ferrule.mcp import MCPServerStdio
from ferrule.mcp import MCPToolCallError

pytestmark = pytest.mark.anyio

MALFORMED = ["not_an_object", "string_schema", "#3 of the page", "bad_annotations"]


async def test_a_malformed_tool_is_excluded_and_every_other_tool_stays(
    raw: Callable[..., MCPServerStdio], events: Any
) -> None:
    async with raw("--malformed-tools") as server:
        names = [info.name for info in await server.list_tools()]
        assert server.is_connected
    assert names == [
        "echo",
        "crash",
        "hang",
        "garbage",
        "bad_shape",
        "change_tools",
        "env",
        "crash_once",
        "sized",
        "huge_no_id",
        "stderr",
        "server_error",
        "draft7",
    ]
    excluded = {event.tool_name: event.message for event in events.of("tool_excluded")}
    assert list(excluded) == MALFORMED
    assert "inputSchema: Input should be a valid dictionary" in excluded["not_an_object"]
    assert "inputSchema.type: Input should be 'object'" in excluded["string_schema"]
    assert "name: Field required" in excluded["#3 of the page"]
    assert "annotations: Input should be a valid dictionary" in excluded["bad_annotations"]
    assert "connection_lost" not in events.kinds()


async def test_excluded_malformed_tools_respect_the_allow_and_deny_lists(
    raw: Callable[..., MCPServerStdio], events: Any
) -> None:
    async with raw("--malformed-tools", deny_tools=["not_an_object", "crash"]) as server:
        names = [info.name for info in await server.list_tools()]
    assert "crash" not in names
    assert [event.tool_name for event in events.of("tool_excluded")] == MALFORMED[1:]


async def test_the_tools_of_a_page_with_a_malformed_tool_work_through_an_agent(
    raw: Callable[..., MCPServerStdio],
    events: Any,
    scripted: Callable[..., Any],
    results: Callable[..., list[Any]],
) -> None:
    seen: list[AgentInfo] = []
    model = scripted([("draft7", {"pair": ["a", 1]}), ("draft7", {"pair": [1, "a"]})], seen)
    result = await Agent(model, toolsets=[raw("--malformed-tools")]).run("go")
    offered = {tool.name: tool.parameters_json_schema for tool in seen[0].function_tools}
    assert not set(MALFORMED) & set(offered)
    # The Draft 7 tuple schema is offered as its Draft 2020-12 equivalent.
    assert offered["draft7"]["properties"]["pair"] == {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "integer"}],
    }
    called, refused = results(result.all_messages())
    assert isinstance(called, ToolReturnPart)
    assert json.loads(called.content) == {"pair": ["a", 1]}
    assert isinstance(refused, RetryPromptPart)  # validated locally against the upgraded schema
    assert "must be string" in str(refused.content)


@pytest.mark.parametrize("message", ["Internal error: the disk is full", "Connection closed"])
async def test_a_server_answering_minus_32000_keeps_its_connection(
    raw: Callable[..., MCPServerStdio], events: Any, message: str
) -> None:
    async with raw() as server:
        with pytest.raises(MCPToolCallError) as caught:
            await server.call_tool("server_error", {"message": message})
        assert caught.value.code == -32000
        assert message in str(caught.value)
        assert server.is_connected
        pid = server.pid
        echoed = await server.call_tool("echo", {"after": "error"})
        assert echoed.content[0].text == '{"after": "error"}'
        assert server.pid == pid  # the same process: nothing was torn down
    assert "connection_lost" not in events.kinds()


async def test_a_minus_32000_answer_is_a_known_outcome_for_the_model(
    raw: Callable[..., MCPServerStdio],
    events: Any,
    scripted: Callable[..., Any],
    results: Callable[..., list[Any]],
) -> None:
    model = scripted([("server_error", {"message": "quota exceeded"}), ("echo", {"x": 1})])
    server = raw()
    async with server:
        result = await Agent(model, toolsets=[server]).run("go")
        assert server.is_connected
    rejected, echoed = results(result.all_messages())
    assert isinstance(rejected, RetryPromptPart)  # the server answered: not "outcome unknown"
    assert "answered with error -32000: quota exceeded" in str(rejected.content)
    assert json.loads(echoed.content) == {"x": 1}
    assert "connection_lost" not in events.kinds()
    assert events.kinds().count("connected") == 1


async def test_the_sdk_closed_signal_is_still_a_lost_connection(
    raw: Callable[..., MCPServerStdio], events: Any
) -> None:
    async with raw() as server:
        with pytest.raises(MCPConnectionLostError, match="exited with status 3"):
            await server.call_tool("crash")
    assert "connection_lost" in events.kinds()


async def test_a_minus_32000_answer_over_streamable_http_keeps_the_session(
    http_server: Any, events: Any
) -> None:
    server = MCPServerHTTP(
        http_server.origin + "/mcp",
        id="remote",
        url_policy=UrlPolicy.local(http_server.origin),
        on_event=events.append,
    )
    async with server:
        for message in ("backend unavailable", "Connection closed"):
            with pytest.raises(MCPToolCallError, match=message) as caught:
                await server.call_tool("server_error", {"message": message})
            assert caught.value.code == -32000
            assert server.is_connected
        added = await server.call_tool("add", {"a": 1, "b": 2})
        assert added.structured_content == {"result": 3}
    assert "connection_lost" not in events.kinds()
    assert events.kinds().count("connected") == 1


async def test_in_process_a_minus_32000_answer_is_told_by_its_text(sdk_server: Any, events: Any) -> None:
    # No transport streams to watch: only the SDK's own text marks its closed-connection signal.
    async with MCPServerInProcess(sdk_server, id="sdk", on_event=events.append) as server:
        with pytest.raises(MCPToolCallError, match="backend unavailable"):
            await server.call_tool("server_error", {"message": "backend unavailable"})
        assert server.is_connected
        with pytest.raises(MCPConnectionLostError):
            await server.call_tool("server_error", {"message": "Connection closed"})
        assert not server.is_connected
