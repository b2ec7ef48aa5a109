"""Deferred tools and the built-in `tool_search` (BM25 over names and descriptions)."""

from __future__ import annotations

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import Tool
from ferrule.agent._tool_search import BM25
from ferrule.agent._tool_search import MAX_RESULTS
from ferrule.agent._tool_search import tokenize
from ferrule.agent.testing import FunctionModel
from ferrule.agent.testing import full_profile
from ferrule.agent.toolsets import FunctionToolset
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolAvailabilityDeltaPart
from ferrule.core.messages import ToolReturnPart
from tests.support.scripts import Script
from tests.support.scripts import call
from tests.support.scripts import text

from ._support import request_parts

pytestmark = pytest.mark.anyio


def get_weather(city: str) -> str:
    """Get the current weather forecast for a city."""
    return f"sunny in {city}"


def send_email(to: str, body: str) -> str:
    """Send an email message to a recipient."""
    return "sent"


def convert_currency(amount: float, to: str) -> str:
    """Convert money between currencies using today's exchange rate."""
    return "converted"


def test_tokenize_splits_identifiers() -> None:
    assert tokenize("getWeatherForecast read_file HTTPServer v2") == [
        "get",
        "weather",
        "forecast",
        "read",
        "file",
        "http",
        "server",
        "v",
        "2",
    ]


def test_bm25_ranks_name_and_description_matches() -> None:
    definitions = [Tool(f).definition for f in (send_email, get_weather, convert_currency)]
    index = BM25(definitions)
    assert [d.name for d in index.search("weather forecast", 5)] == ["get_weather"]
    assert [d.name for d in index.search("email", 5)] == ["send_email"]
    assert index.search("unrelated banana", 5) == []
    ranked = index.search("convert send money email", 5)
    assert {d.name for d in ranked} == {"send_email", "convert_currency"}
    assert len(index.search("get send convert weather email money", 2)) == 2


async def test_deferred_tools_stay_out_until_search_surfaces_them() -> None:
    script = Script(
        call("tool_search", {"query": "weather"}, "s1"),
        call("get_weather", {"city": "Paris"}, "w1"),
        text("ok"),
    )
    toolset = FunctionToolset([get_weather, send_email]).deferred()
    result = await Agent(FunctionModel(script), tools=[convert_currency], toolsets=[toolset]).run("go")
    assert script.names(0) == ["convert_currency", "tool_search"]
    assert script.names(1) == ["convert_currency", "get_weather", "tool_search"]
    assert all(not d.defer_loading for d in script.tools[1])
    search_result, weather = request_parts(result.all_messages(), ToolReturnPart)
    assert search_result.tool_kind == "tool-search"
    assert search_result.content == [
        {"name": "get_weather", "description": "Get the current weather forecast for a city."}
    ]
    assert weather.content == "sunny in Paris"
    [delta] = request_parts(result.all_messages(), ToolAvailabilityDeltaPart)
    assert (delta.tools_added, delta.tool_call_id) == (["get_weather"], "s1")


async def test_calling_an_unrevealed_deferred_tool_is_an_unknown_tool() -> None:
    script = Script(call("send_email", {"to": "a", "body": "b"}), text("ok"))
    result = await Agent(FunctionModel(script), tools=[Tool(send_email, defer_loading=True)]).run("go")
    [retry] = request_parts(result.all_messages(), RetryPromptPart)
    assert "Unknown tool name: 'send_email'" in str(retry.content)


async def test_revealed_tools_are_reconstructed_from_history() -> None:
    first = Script(call("tool_search", {"query": "email"}), text("ok"))
    tools = [Tool(send_email, defer_loading=True), Tool(get_weather, defer_loading=True)]
    result = await Agent(FunctionModel(first), tools=tools).run("go")
    later = Script()
    await Agent(FunctionModel(later), tools=tools).run("again", message_history=result.all_messages())
    assert later.names(0) == ["send_email", "tool_search"]


async def test_native_deferred_profile_receives_every_deferred_definition() -> None:
    profile = msgspec.structs.replace(full_profile(), native_deferred_tools=True)
    script = Script(call("tool_search", {"query": "weather"}), text("ok"))
    model = FunctionModel(script, profile=profile)
    result = await Agent(
        model, tools=[Tool(get_weather, defer_loading=True), Tool(send_email, defer_loading=True)]
    ).run("go")
    assert script.names(0) == ["get_weather", "send_email", "tool_search"]
    assert [d.defer_loading for d in script.tools[0]] == [True, True, False]
    [found] = request_parts(result.all_messages(), ToolReturnPart)
    assert found.tool_kind == "tool-search"


@pytest.mark.parametrize(("limit", "accepted"), [(MAX_RESULTS, True), (MAX_RESULTS + 1, False), (0, False)])
async def test_max_results_bounds(limit: int, accepted: bool) -> None:
    script = Script(call("tool_search", {"query": "weather", "max_results": limit}), text("ok"))
    result = await Agent(FunctionModel(script), tools=[Tool(get_weather, defer_loading=True)]).run("go")
    if accepted:
        assert request_parts(result.all_messages(), ToolReturnPart)[0].tool_kind == "tool-search"
    else:
        assert request_parts(result.all_messages(), RetryPromptPart)


async def test_search_returns_at_most_max_results() -> None:
    many = [Tool(get_weather, name=f"weather_{i}", defer_loading=True) for i in range(30)]
    script = Script(call("tool_search", {"query": "weather", "max_results": MAX_RESULTS}), text("ok"))
    result = await Agent(FunctionModel(script), tools=many).run("go")
    [found] = request_parts(result.all_messages(), ToolReturnPart)
    assert len(found.content) == MAX_RESULTS
