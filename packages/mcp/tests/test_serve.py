"""ferrule tools and agents served as MCP servers, called by the SDK's own client (in process and over HTTP)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult
from mcp.types import ImageContent
from mcp.types import TextContent

from ferrule.agent import Agent
from ferrule.agent import ModelRetry
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolReturn
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.url_policy import UrlPolicy
from ferrule.mcp import MCPServerHTTP
from ferrule.mcp import MCPServerInProcess
from ferrule.mcp import expose_agent
from ferrule.mcp import expose_tools
from tests.support.asgi_server import AsgiServer

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n-not-really"


@dataclass
class Point:
    x: int
    y: int


def greet(ctx: RunContext[str], name: str) -> str:
    """Greet someone.

    Args:
        name: Who to greet.
    """
    return f"{ctx.deps}, {name}!"


def midpoint(a: Point, b: Point) -> Point:
    """The point halfway between two points."""
    return Point((a.x + b.x) // 2, (a.y + b.y) // 2)


def picture() -> ToolReturn:
    """A picture with a caption."""
    return ToolReturn(
        return_value="a tiny picture", content=[BinaryContent(data=PNG, media_type="image/png")]
    )


def picky(word: str) -> str:
    """Accepts only 'please'."""
    if word != "please":
        raise ModelRetry("Say please.")
    return "thank you"


def broken() -> str:
    """Always raises."""
    raise KeyError("internal detail")


TOOLS = [greet, midpoint, picture, picky, broken]


def text_of(result: CallToolResult, index: int = 0) -> str:
    block = result.content[index]
    assert isinstance(block, TextContent), block
    return block.text


def image_of(result: CallToolResult, index: int) -> ImageContent:
    block = result.content[index]
    assert isinstance(block, ImageContent), block
    return block


async def test_tools_served_in_process_to_the_sdk_client() -> None:
    exposed = expose_tools(TOOLS, name="toolbox", deps="Hello")
    async with Client(exposed.sdk_server, cache=None) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(listed) == ["broken", "greet", "midpoint", "picky", "picture"]
        assert listed["greet"].input_schema["properties"]["name"]["description"] == "Who to greet."
        assert text_of(await client.call_tool("greet", {"name": "Ada"})) == "Hello, Ada!"
        mid = await client.call_tool("midpoint", {"a": {"x": 0, "y": 0}, "b": {"x": 4, "y": 2}})
        assert mid.structured_content == {"x": 2, "y": 1}
        pic = await client.call_tool("picture", {})
        assert text_of(pic) == "a tiny picture"
        assert base64.b64decode(image_of(pic, 1).data) == PNG
        assert image_of(pic, 1).mime_type == "image/png"
        refused = await client.call_tool("picky", {"word": "now"})
        assert refused.is_error
        assert text_of(refused) == "Say please."
        invalid = await client.call_tool("greet", {"name": 3})
        assert invalid.is_error
        assert "Invalid arguments for tool 'greet'" in text_of(invalid)
        failed = await client.call_tool("broken", {})
        assert failed.is_error
        assert text_of(failed) == "Tool 'broken' failed (KeyError)."
        assert "internal detail" not in text_of(failed)


def test_tools_that_need_decisions_cannot_be_served() -> None:
    with pytest.raises(UserError, match="approval or external decision"):
        expose_tools([Tool(greet, requires_approval=True)])
    with pytest.raises(UserError, match="at least one tool"):
        expose_tools([])


def _echo_agent() -> Agent[Any, str]:
    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        prompt = messages[0].parts[-1].content  # type: ignore[union-attr]
        return ModelResponse(parts=[TextPart(f"you asked: {prompt}")])

    return Agent(FunctionModel(answer), name="echo")


async def test_agent_served_as_one_tool() -> None:
    exposed = expose_agent(_echo_agent())
    async with Client(exposed.sdk_server, cache=None) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "ask_echo"
        assert tool.input_schema["required"] == ["prompt"]
        result = await client.call_tool("ask_echo", {"prompt": "why?"})
    assert text_of(result) == "you asked: why?"


async def test_a_ferrule_agent_uses_another_ferrule_agent_through_mcp() -> None:
    inner = MCPServerInProcess(expose_agent(_echo_agent()).sdk_server, id="echo")

    def outer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart(tool_name="ask_echo", args={"prompt": "ping"})])
        return ModelResponse(parts=[TextPart(str(returns[0].content))])

    result = await Agent(FunctionModel(outer), toolsets=[inner]).run("go")
    assert result.output == "you asked: ping"


async def test_tools_served_over_streamable_http(events: Any) -> None:
    exposed = expose_tools([greet], name="toolbox", deps="Hi")
    with AsgiServer(exposed.http_app, lifespan="on") as running:
        server = MCPServerHTTP(running.origin + "/mcp", url_policy=UrlPolicy.local(running.origin))
        async with server:
            result = await server.call_tool("greet", {"name": "Bob"})
    assert text_of(result) == "Hi, Bob!"
