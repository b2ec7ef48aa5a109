"""An SDK `MCPServer` in process: tool mapping, rich results, policies, change notifications, callbacks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from ferrule.agent import Agent
from ferrule.agent import Paused
from ferrule.agent import RunContext
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.mcp import ElicitationRequest
from ferrule.mcp import ElicitationResponse
from ferrule.mcp import MCPLimits
from ferrule.mcp import MCPServerClosedError
from ferrule.mcp import MCPServerInProcess
from ferrule.mcp import MCPToolCallError
from ferrule.mcp import sampling_with_model

pytestmark = pytest.mark.anyio


def in_process(server: Any, events: Any, **options: Any) -> MCPServerInProcess:
    return MCPServerInProcess(server, id="sdk", on_event=events.append, **options)


async def test_tools_are_listed_with_their_schemas_and_unsupported_schemas_are_excluded(
    sdk_server: Any, events: Any
) -> None:
    async with in_process(sdk_server, events) as server:
        infos = {info.name: info for info in await server.list_tools()}
    assert "patterned" not in infos
    (excluded,) = events.of("tool_excluded")
    assert excluded.tool_name == "patterned"
    assert "regular expressions are not supported" in excluded.message
    add = infos["add"]
    assert add.input_schema["required"] == ["a", "b"]
    assert add.description == "Add two integers."
    assert add.side_effect == "non_idempotent"  # server hints are not trusted by default


async def test_agent_calls_in_process_tools_and_gets_structured_results(
    sdk_server: Any, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    seen: list[AgentInfo] = []
    model = scripted([("add", {"a": 2, "b": 40}), ("fail", {"reason": "the disk is full"})], seen)
    result = await Agent(model, toolsets=[in_process(sdk_server, events)]).run("go")
    added, failed = results(result.all_messages())
    assert added.content == {"result": 42}
    assert isinstance(failed, RetryPromptPart)
    assert "the disk is full" in failed.content
    # The server's instructions are exposed to the application, never sent to the model.
    assert seen[0].instructions is None


async def test_invalid_arguments_are_rejected_locally_before_any_request(
    sdk_server: Any, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    model = scripted([("add", {"a": "two", "b": 1}), ("add", {"a": 1})])
    result = await Agent(model, toolsets=[in_process(sdk_server, events)], retries=3).run("go")
    wrong_type, missing = results(result.all_messages())
    assert wrong_type.part_kind == "retry-prompt"
    assert wrong_type.content[0]["loc"] == ["a"]
    assert "must be integer" in wrong_type.content[0]["msg"]
    assert "'b'" in str(missing.content) or "b" in str(missing.content)


async def test_images_audio_and_blobs_are_sent_as_follow_up_content(
    sdk_server: Any, events: Any, scripted: Callable[..., Any]
) -> None:
    model = scripted([[("image", {}), ("audio", {}), ("embedded", {})]])
    result = await Agent(model, toolsets=[in_process(sdk_server, events, prefer_structured=False)]).run("go")
    messages = result.all_messages()
    returns = {p.tool_name: p for p in _parts(messages, ToolReturnPart)}
    assert "1 attachment(s) (image/png)" in returns["image"].content
    assert "audio/wav" in returns["audio"].content
    text_resource, link = returns["embedded"].content
    assert text_resource == "the notes"
    assert link == {
        "type": "resource_link",
        "uri": "file:///big.csv",
        "name": "big.csv",
        "mime_type": "text/csv",
    }
    # One follow-up user prompt per call, in call order, after all tool results.
    follow_ups = _parts(messages, UserPromptPart)[1:]
    media = [c for part in follow_ups for c in part.content if isinstance(c, BinaryContent)]
    assert [m.media_type for m in media] == ["image/png", "audio/wav", "image/png"]
    assert media[0].data.startswith(b"\x89PNG")


def _parts(messages: Sequence[Message], kind: type[Any]) -> list[Any]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, kind)]


async def test_allow_deny_lists_and_namespacing(sdk_server: Any, events: Any) -> None:
    server = in_process(
        sdk_server, events, allow_tools=["add", "big", "fail"], deny_tools=["fail"], namespace=True
    )
    async with server:
        ctx = _ctx()
        names = [t.name for t in await server.get_tools(ctx)]
        assert names == ["sdk__add", "sdk__big"]
        assert [info.name for info in await server.list_tools()] == ["add", "big"]


async def test_wrapped_and_renamed_tools_keep_working(
    sdk_server: Any, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    toolset = in_process(sdk_server, events, allow_tools=["add"]).prefixed("math")
    result = await Agent(scripted([("math__add", {"a": 1, "b": 2})]), toolsets=[toolset]).run("go")
    (added,) = results(result.all_messages())
    assert added.content == {"result": 3}


async def test_approval_by_name_and_by_predicate(
    sdk_server: Any, events: Any, scripted: Callable[..., Any]
) -> None:
    by_name = in_process(sdk_server, events, requires_approval=["add"])
    outcome = await Agent(scripted([("add", {"a": 1, "b": 1})]), toolsets=[by_name]).run_until_pause("go")
    assert isinstance(outcome, Paused)
    assert [c.tool_name for c in outcome.pending] == ["add"]

    asked: list[tuple[str, dict[str, Any]]] = []

    def big_numbers(ctx: RunContext[Any], name: str, args: dict[str, Any]) -> bool:
        asked.append((name, args))
        return args.get("a", 0) > 100

    policy = in_process(sdk_server, events, requires_approval=big_numbers)
    steps = [("add", {"a": 1, "b": 1}), ("add", {"a": 1000, "b": 1})]
    outcome = await Agent(scripted(steps), toolsets=[policy]).run_until_pause("go")
    assert isinstance(outcome, Paused)
    assert [c.args for c in outcome.pending] in ([{"a": 1000, "b": 1}], ['{"a":1000,"b":1}'])
    assert asked == [("add", {"a": 1, "b": 1}), ("add", {"a": 1000, "b": 1})]


async def test_tool_list_change_notification_refreshes_the_cached_list(sdk_server: Any, events: Any) -> None:
    changed = anyio.Event()

    def on_event(event: Any) -> None:
        events.append(event)
        if event.kind == "tools_changed":
            changed.set()

    server = MCPServerInProcess(sdk_server, id="sdk", on_event=on_event)
    async with server:
        before = [t.name for t in await server.get_tools(_ctx())]
        assert "grown" not in before
        assert (await server.call_tool("grow")).structured_content == {"result": "grew"}
        with anyio.fail_after(5):
            await changed.wait()
        after = [t.name for t in await server.get_tools(_ctx())]
    assert after == [*before, "grown"]


async def test_cached_tool_list_is_not_listed_again(sdk_server: Any, events: Any) -> None:
    server = in_process(sdk_server, events)
    calls = 0
    original = sdk_server._lowlevel_server._request_handlers["tools/list"].handler

    async def counting(ctx: Any, params: Any) -> Any:
        nonlocal calls
        calls += 1
        return await original(ctx, params)

    sdk_server._lowlevel_server._request_handlers["tools/list"] = type(
        sdk_server._lowlevel_server._request_handlers["tools/list"]
    )(sdk_server._lowlevel_server._request_handlers["tools/list"].params_type, counting)
    async with server:
        for _ in range(3):
            await server.get_tools(_ctx())
    assert calls == 1


async def test_concurrent_first_use_connects_once(sdk_server: Any, events: Any) -> None:
    server = in_process(sdk_server, events)
    async with server:
        names: list[list[str]] = []

        async def use() -> None:
            names.append([t.name for t in await server.get_tools(_ctx())])

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(use)
    assert events.kinds().count("connected") == 1
    assert len({tuple(n) for n in names}) == 1


async def test_concurrent_runs_share_one_connection_when_entered_around_them(
    sdk_server: Any, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    server = in_process(sdk_server, events, allow_tools=["add"])
    outputs: list[Any] = []

    async def run(n: int) -> None:
        result = await Agent(scripted([("add", {"a": n, "b": n})]), toolsets=[server]).run("go")
        outputs.append(results(result.all_messages())[0].content["result"])

    async with server:
        async with anyio.create_task_group() as tg:
            for n in range(5):
                tg.start_soon(run, n)
        assert server.is_connected
    assert sorted(outputs) == [0, 2, 4, 6, 8]
    assert events.kinds().count("connected") == 1


async def test_connection_is_lazy_unless_eager(sdk_server: Any, events: Any) -> None:
    lazy = in_process(sdk_server, events)
    async with lazy:
        assert not lazy.is_connected
        await lazy.list_tools()
        assert lazy.is_connected
    eager = in_process(sdk_server, events, eager=True)
    async with eager:
        assert eager.is_connected
        assert eager.instructions == "Always call every tool twice."
    assert not eager.is_connected


async def test_using_a_server_that_is_not_entered_says_what_to_do(sdk_server: Any, events: Any) -> None:
    with pytest.raises(MCPServerClosedError, match="enter it first"):
        await in_process(sdk_server, events).list_tools()


async def test_long_descriptions_are_cut_to_the_limit_with_the_ellipsis(sdk_server: Any, events: Any) -> None:
    text = "Add two integers."
    for limit, expected in [
        (len(text), text),
        (len(text) - 1, "Add two integ..."),
        (8, "Add t..."),
        (2, "Ad"),
    ]:
        server = in_process(sdk_server, events, limits=MCPLimits(max_description_chars=limit))
        async with server:
            infos = {i.name: i for i in await server.list_tools()}
        description = infos["add"].description
        assert description == expected, limit
        assert description is not None
        assert len(description) <= limit


async def test_result_size_limit_applies_in_process(
    sdk_server: Any, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    server = in_process(
        sdk_server, events, limits=MCPLimits(max_message_bytes=1000), side_effects={"big": "read_only"}
    )
    result = await Agent(scripted([("big", {"size": 1001}), ("big", {"size": 10})]), toolsets=[server]).run(
        "go"
    )
    too_big, ok = results(result.all_messages())
    assert isinstance(too_big, RetryPromptPart)
    assert "limit of 1000 bytes" in too_big.content
    assert ok.content == {"result": "z" * 10}


async def test_elicitation_is_answered_by_the_application(sdk_server: Any, events: Any) -> None:
    asked: list[ElicitationRequest] = []

    async def answer(request: ElicitationRequest) -> ElicitationResponse:
        asked.append(request)
        return ElicitationResponse(action="accept", content={"name": "Ada"})

    server = in_process(sdk_server, events, elicitation=answer, mode="legacy")
    async with server:
        result = await server.call_tool("ask_name")
    assert result.content[0].text == "accept:Ada"
    (request,) = asked
    assert request.server_id == "sdk"
    assert request.message == "What is your name?"
    assert request.requested_schema is not None
    assert "name" in request.requested_schema["properties"]


async def test_sampling_is_routed_to_a_ferrule_model(sdk_server: Any, events: Any) -> None:
    calls: list[Any] = []

    def model_answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        calls.append((messages, info))
        return ModelResponse(parts=[TextPart("short version")], model_name="tiny")

    handler = sampling_with_model(FunctionModel(model_answer), max_tokens=20)
    server = in_process(sdk_server, events, sampling=handler, mode="legacy")
    async with server:
        result = await server.call_tool("summarize", {"text": "a very long text"})
    assert result.content[0].text == "tiny: short version"
    ((messages, info),) = calls
    assert info.instructions == "Summarize."
    assert info.model_settings.max_tokens == 20  # the server asked for 50; the cap wins
    assert isinstance(messages[0], ModelRequest)
    assert messages[0].parts[0].content == "a very long text"


async def test_sampling_without_a_handler_is_refused(sdk_server: Any, events: Any) -> None:
    async with in_process(sdk_server, events, mode="legacy") as server:
        with pytest.raises(MCPToolCallError, match="Sampling not supported"):
            await server.call_tool("summarize", {"text": "x"})


@pytest.mark.parametrize(
    ("kind", "tool", "args"), [("sampling", "summarize", {"text": "x"}), ("elicitation", "ask_name", {})]
)
async def test_a_failing_handler_is_logged_and_the_server_gets_a_generic_error(
    sdk_server: Any, events: Any, caplog: pytest.LogCaptureFixture, kind: str, tool: str, args: dict[str, Any]
) -> None:
    async def fail(request: Any) -> Any:
        raise RuntimeError("the handler's own detail")

    with caplog.at_level(logging.ERROR, logger="ferrule.mcp"):
        async with in_process(sdk_server, events, mode="legacy", **{kind: fail}) as server:
            with pytest.raises(MCPToolCallError, match="the client could not complete the request") as caught:
                await server.call_tool(tool, args)
    assert "the handler's own detail" not in str(caught.value)
    assert f"the {kind} handler for MCP server 'sdk' failed" in caplog.messages
    (record,) = [r for r in caplog.records if r.name == "ferrule.mcp" and r.exc_info]
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == "the handler's own detail"


def _ctx() -> RunContext[Any]:
    from ferrule.core.usage import RunUsage

    return RunContext(
        deps=None, model=FunctionModel(lambda m, i: ModelResponse(parts=[])), usage=RunUsage(), messages=[]
    )
