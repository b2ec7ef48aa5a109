"""History processors: agent, capability and run processors on the provider-facing view only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent import Capability
from ferrule.agent import RunContext
from ferrule.agent.history_processors import compact_text
from ferrule.agent.history_processors import drop_orphaned_tool_traffic
from ferrule.agent.history_processors import keep_last
from ferrule.agent.history_processors import summarize_prefix
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart

pytestmark = pytest.mark.anyio


def user(content: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(content=content)])


def reply(content: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content)])


def calls(*ids: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool_name="t", args={}, tool_call_id=i) for i in ids])


def results(*ids: str) -> ModelRequest:
    return ModelRequest(parts=[ToolReturnPart(tool_name="t", content=i, tool_call_id=i) for i in ids])


def check_paired(messages: Sequence[Message]) -> None:
    """Every tool call is answered by the next message and every answer follows its call."""
    assert messages
    assert isinstance(messages[0], ModelRequest)
    for index, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            ids = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
            if ids:
                nxt = messages[index + 1]
                assert isinstance(nxt, ModelRequest)
                assert ids <= {
                    p.tool_call_id for p in nxt.parts if isinstance(p, (ToolReturnPart, RetryPromptPart))
                }
        else:
            answered = {
                p.tool_call_id
                for p in message.parts
                if isinstance(p, ToolReturnPart) or (isinstance(p, RetryPromptPart) and p.tool_name)
            }
            if answered:
                prev = messages[index - 1]
                assert isinstance(prev, ModelResponse)
                assert answered <= {p.tool_call_id for p in prev.parts if isinstance(p, ToolCallPart)}


LONG: list[Message] = [
    user("first question"),
    calls("a1", "a2"),
    results("a1", "a2"),
    reply("first answer"),
    user("second question"),
    calls("b1"),
    results("b1"),
    calls("b2"),
    results("b2"),
    reply("second answer"),
    user("third question"),
]


def test_keep_last_never_cuts_inside_a_tool_exchange() -> None:
    # The last 6 messages start in the middle of the second tool exchange (results b1).
    trimmed = keep_last(6)(LONG)
    assert trimmed == LONG[-1:] or trimmed[0] is LONG[10]
    check_paired(trimmed)
    # A window that starts at a response moves forward to the next user turn.
    for n in range(1, len(LONG) + 2):
        view = keep_last(n)(LONG)
        check_paired(view)
        assert view[-1] is LONG[-1]


def test_keep_last_with_a_tool_loop_tail_goes_back_to_the_user_turn() -> None:
    history: list[Message] = [user("q"), calls("x"), results("x"), calls("y"), results("y")]
    view = keep_last(2)(history)
    assert view == history
    check_paired(view)


def test_keep_last_needs_a_positive_count() -> None:
    with pytest.raises(UserError):
        keep_last(0)
    only = [user("only")]
    assert keep_last(1)(only) == only


def test_drop_orphaned_tool_traffic_after_a_blind_cut() -> None:
    # A blind slice starting at a tool result: the result has no call, the view starts with it.
    cut = LONG[6:]
    view = drop_orphaned_tool_traffic(cut)
    check_paired(view)
    assert all(not (isinstance(p, ToolReturnPart) and p.tool_call_id == "b1") for m in view for p in m.parts)
    # A call whose result was trimmed away is dropped too, and the emptied response disappears.
    broken: list[Message] = [user("q"), calls("c1", "c2"), results("c1"), reply("done"), user("next")]
    view = drop_orphaned_tool_traffic(broken)
    check_paired(view)
    assert [p.tool_call_id for p in view[1].parts if isinstance(p, ToolCallPart)] == ["c1"]
    only_orphans: list[Message] = [user("q"), calls("z"), user("next")]
    [merged] = drop_orphaned_tool_traffic(only_orphans)
    assert isinstance(merged, ModelRequest)
    assert [p.content for p in merged.parts] == ["q", "next"]  # type: ignore[union-attr]


def test_drop_orphaned_keeps_a_valid_history_unchanged() -> None:
    assert drop_orphaned_tool_traffic(LONG) == LONG


def test_compact_text_merges_adjacent_text_without_touching_the_input() -> None:
    response = ModelResponse(
        parts=[TextPart("a"), TextPart("b"), ToolCallPart(tool_name="t", tool_call_id="x"), TextPart("c")]
    )
    request = ModelRequest(parts=[UserPromptPart(content="one"), UserPromptPart(content="two")])
    view = compact_text()([request, response])
    assert [p.content for p in view[0].parts] == ["one\n\ntwo"]  # type: ignore[union-attr]
    assert [type(p).__name__ for p in view[1].parts] == ["TextPart", "ToolCallPart", "TextPart"]
    assert view[1].parts[0].content == "ab"  # type: ignore[union-attr]
    assert len(response.parts) == 4
    assert len(request.parts) == 2


async def test_summarize_prefix_replaces_older_messages_and_caches() -> None:
    summarized: list[int] = []

    async def summarize(ctx: RunContext[Any], messages: list[Message]) -> str:
        summarized.append(len(messages))
        return f"{len(messages)} earlier messages"

    processor = summarize_prefix(summarize, keep_last=3)
    ctx: Any = None
    view = await processor(ctx, LONG)
    check_paired(view)
    first = view[0]
    assert isinstance(first, ModelRequest)
    assert isinstance(first.parts[0], SystemPromptPart)
    assert first.parts[0].content.endswith("10 earlier messages")
    assert view[-1] is LONG[-1] or view == [first]
    await processor(ctx, LONG)
    assert summarized == [10]
    short = LONG[:4]
    assert await processor(ctx, short) == short


async def test_processors_apply_agent_then_capability_then_run_to_the_view_only() -> None:
    order: list[str] = []
    seen: list[list[Message]] = []

    def tag(name: str) -> Any:
        def processor(messages: list[Message]) -> list[Message]:
            order.append(name)
            return [*messages, user(f"from {name}")]

        return processor

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        return reply("ok")

    agent = Agent(
        FunctionModel(model),
        history_processors=[tag("agent")],
        capabilities=[Capability(history_processors=[tag("capability")])],
    )
    result = await agent.run("go", history_processors=[tag("run")])
    assert order == ["agent", "capability", "run"]
    assert [m.parts[0].content for m in seen[0][1:]] == ["from agent", "from capability", "from run"]  # type: ignore[union-attr]
    assert len(result.all_messages()) == 2  # canonical history untouched


async def test_trimmed_run_history_sends_a_valid_view_mid_tool_exchange() -> None:
    seen: list[list[Message]] = []

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        step = len(seen)
        if step <= 3:
            return ModelResponse(
                parts=[ToolCallPart(tool_name="echo", args={"x": step}, tool_call_id=f"s{step}")]
            )
        return reply("ok")

    def echo(x: int) -> int:
        return x

    def first_and_last(messages: list[Message]) -> list[Message]:
        # Keeps the prompt and the last three messages: cuts straight through a tool exchange.
        return [messages[0], *messages[-3:]] if len(messages) > 4 else messages

    agent = Agent(
        FunctionModel(model), tools=[echo], history_processors=[first_and_last, drop_orphaned_tool_traffic]
    )
    result = await agent.run("go")
    for view in seen:
        check_paired(view)
    assert [len(v) for v in seen] == [1, 3, 3, 3]
    assert len(result.all_messages()) == 8
