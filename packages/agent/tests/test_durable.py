"""`ferrule.agent.durable` with an in-memory engine double: crashes, replays, step IDs, records, streams."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent import ModelRetry
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolReturn
from ferrule.agent.durable import Binding
from ferrule.agent.durable import CheckpointedStreamSink
from ferrule.agent.durable import DurableError
from ferrule.agent.durable import InvalidDurableRecordError
from ferrule.agent.durable import MemoryStreamCheckpointStore
from ferrule.agent.durable import Step
from ferrule.agent.durable import bind
from ferrule.agent.durable import current
from ferrule.agent.exceptions import ToolDefinitionError
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import FerruleError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from tests.support.durable_engine import Crash
from tests.support.durable_engine import Engine
from tests.support.scripts import text

pytestmark = pytest.mark.anyio


def three_steps(log: list[str]) -> tuple[FunctionModel, list[int], Tool[Any]]:
    """A run of three model requests: `lookup` twice, then text; `seen` counts requests per turn."""
    seen: list[int] = []

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        seen.append(turn)
        if turn < 2:
            return ModelResponse(parts=[ToolCallPart("lookup", {"n": turn}, tool_call_id=f"call_{turn}")])
        return text("done")

    async def lookup(n: int) -> str:
        log.append(f"lookup {n}")
        return f"value {n}"

    return FunctionModel(answer), seen, Tool(lookup, side_effect="idempotent")


async def crash_once(
    agent: Agent[Any, Any], run_id: str, prompt: str, at: tuple[str, str], **run_options: Any
) -> Engine:
    """Run `agent` on an engine that crashes at `at`; the engine (no longer crashing) to run it again on."""
    engine = Engine()
    engine.crash_at = at
    with bind(Binding(run_id), engine), pytest.raises(Crash):
        await agent.run(prompt, **run_options)
    engine.crash_at = None
    return engine


async def test_a_crash_after_the_first_tool_call_repeats_nothing() -> None:
    log: list[str] = []
    model, seen, tool = three_steps(log)
    agent = Agent(model, tools=[tool])
    engine = await crash_once(agent, "run-1", "go", ("step.1.model_request", "before"))
    assert seen == [0]
    assert log == ["lookup 0"]
    with bind(Binding("run-1"), engine):
        result = await agent.run("go")
    assert result.output == "done"
    assert seen == [0, 1, 2], "each model request once"
    assert log == ["lookup 0", "lookup 1"], "each tool call once"
    assert engine.executed == [
        "step.0.model_request",
        "step.0.tool_call.call_0",
        "step.1.model_request",
        "step.1.tool_call.call_1",
        "step.2.model_request",
    ]
    assert result.run_id == "run-1"


async def test_a_crash_during_a_model_request_repeats_only_that_request() -> None:
    log: list[str] = []
    model, seen, tool = three_steps(log)
    agent = Agent(model, tools=[tool])
    engine = await crash_once(agent, "run-1", "go", ("step.1.model_request", "inside"))
    with bind(Binding("run-1"), engine):
        assert (await agent.run("go")).output == "done"
    assert seen == [0, 1, 1, 2]
    assert log == ["lookup 0", "lookup 1"]


async def test_a_started_non_idempotent_call_is_unknown_after_a_crash_and_not_run_again() -> None:
    charged: list[int] = []

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(m, ModelResponse) for m in messages):
            return ModelResponse(parts=[ToolCallPart("charge", {"cents": 5}, tool_call_id="c1")])
        return text("checked")

    async def charge(cents: int) -> str:
        charged.append(cents)
        return "charged"

    agent = Agent(FunctionModel(answer), tools=[Tool(charge)])
    engine = await crash_once(agent, "run-9", "pay", ("step.0.tool_call", "inside"))
    with bind(Binding("run-9"), engine):
        result = await agent.run("pay")
    assert charged == [5], "never charged twice"
    part = result.all_messages()[2].parts[0]
    assert isinstance(part, ToolReturnPart)
    assert part.outcome == "interrupted"
    assert part.metadata == {"ferrule_outcome": "unknown"}
    assert "was running when the process running it stopped" in str(part.content)
    assert [p.tool_call_id for p in result.unknown_outcomes] == ["c1"]


async def test_step_ids_carry_the_namespace_and_workflow_tools_run_inline() -> None:
    assert Binding("r").step_id(3, "model_request") == "step.3.model_request"
    assert Binding("r", "graph.review").step_id(0, "tool_call", "x") == "graph.review.step.0.tool_call.x"

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(m, ModelResponse) for m in messages):
            return ModelResponse(
                parts=[
                    ToolCallPart("plan", {}, tool_call_id="p"),
                    ToolCallPart("remote", {}, tool_call_id="m"),
                ]
            )
        return text("ok")

    calls: list[str] = []

    async def plan() -> str:
        calls.append("plan")
        return "inline"

    async def remote() -> str:
        calls.append("remote")
        return "mcp"

    tools = [Tool(plan, origin="workflow"), Tool(remote, origin="mcp", side_effect="read_only")]
    engine = Engine()
    with bind(Binding("r", "graph.review"), engine):
        await Agent(FunctionModel(answer), tools=tools).run("x")
    assert engine.executed == [
        "graph.review.step.0.model_request",
        "graph.review.step.0.mcp_request.m",
        "graph.review.step.1.model_request",
    ]
    # Replayed: the workflow tool runs again inline, the MCP call does not.
    with bind(Binding("r", "graph.review"), engine):
        await Agent(FunctionModel(answer), tools=tools).run("x")
    assert sorted(calls) == ["plan", "plan", "remote"]


class StepIds:
    """A `StepRunner` that runs every step it is asked for and records the step's ID."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    async def run_step(self, step: Step, execute: Callable[[], Awaitable[str]]) -> str:
        self.ids.append(step.id)
        return await execute()


async def test_two_calls_with_one_id_in_a_response_are_refused_before_any_tool_step() -> None:
    log: list[int] = []

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(m, ModelResponse) for m in messages):
            return ModelResponse(
                parts=[
                    ToolCallPart("lookup", {"n": 1}, tool_call_id="dup"),
                    ToolCallPart("lookup", {"n": 2}, tool_call_id="dup"),
                ]
            )
        return text("ok")

    async def lookup(n: int) -> str:
        log.append(n)
        return f"value {n}"

    agent = Agent(FunctionModel(answer), tools=[Tool(lookup, side_effect="idempotent")])
    # Outside a durable run both calls run, as before.
    assert (await agent.run("x")).output == "ok"
    assert sorted(log) == [1, 2]
    log.clear()
    # Both would be step `step.0.tool_call.dup`: the second would get the first's recorded result.
    runner = StepIds()
    with bind(Binding("d"), runner), pytest.raises(DurableError, match="two tool calls with ID 'dup'"):
        await agent.run("x")
    assert runner.ids == ["step.0.model_request"]
    assert log == []
    # Replayed from a recorded response, the run is refused the same way, and again nothing runs.
    engine = Engine()
    for _ in range(2):
        with bind(Binding("d"), engine), pytest.raises(DurableError, match="unique"):
            await agent.run("x")
    assert engine.executed == ["step.0.model_request"]
    assert log == []


async def test_retry_prompts_and_tool_returns_replay_as_recorded() -> None:
    attempts: list[int] = []

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < 2:
            return ModelResponse(parts=[ToolCallPart("fetch", {"n": turn}, tool_call_id=f"f{turn}")])
        return text("end")

    async def fetch(ctx: RunContext[None], n: int) -> ToolReturn:
        attempts.append(n)
        if n == 0:
            raise ModelRetry("try n=1")
        return ToolReturn({"n": n}, content="look at this", metadata={"k": 1})

    agent = Agent(FunctionModel(answer), tools=[Tool(fetch, side_effect="read_only")])
    engine = Engine()
    with bind(Binding("rr"), engine):
        first = await agent.run("x")
    with bind(Binding("rr"), engine):
        second = await agent.run("x")
    assert attempts == [0, 1]

    def shape(messages: Sequence[Message]) -> list[Any]:
        return [[(type(p).__name__, getattr(p, "content", None)) for p in m.parts] for m in messages]

    assert shape(second.all_messages()) == shape(first.all_messages())
    assert first.all_messages()[4].parts[0].metadata == {"k": 1}  # type: ignore[union-attr]
    assert second.all_messages()[4].parts[0].metadata == {"k": 1}  # type: ignore[union-attr]


async def test_a_changed_record_is_refused_with_what_to_do() -> None:
    engine = Engine()
    engine.records["step.0.model_request"] = '{"not": "a response"}'
    with bind(Binding("bad"), engine), pytest.raises(InvalidDurableRecordError, match="incompatible version"):
        await Agent(FunctionModel(lambda m, i: text("x"))).run("x")


async def test_an_unrecordable_tool_result_is_refused() -> None:
    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(m, ModelResponse) for m in messages):
            return ModelResponse(parts=[ToolCallPart("odd", {}, tool_call_id="o")])
        return text("ok")

    async def odd() -> Any:
        return object()

    with bind(Binding("odd"), Engine()), pytest.raises(DurableError, match="cannot be recorded as JSON"):
        await Agent(FunctionModel(answer), tools=[Tool(odd, side_effect="read_only")]).run("x")


async def test_without_a_binding_nothing_is_durable() -> None:
    assert current() is None
    result = await Agent(FunctionModel(lambda m, i: text("x"))).run("x")
    assert result.run_id != "run-1"
    with bind(Binding("b"), Engine()) as bound:
        assert current() is bound
    assert current() is None
    assert issubclass(DurableError, FerruleError)


def test_tool_origin_defaults_to_application_and_is_checked() -> None:
    async def f() -> None: ...

    assert Tool(f).origin == "application"
    with pytest.raises(ToolDefinitionError, match="origin must be"):
        Tool(f, origin="remote")  # type: ignore[arg-type]


async def test_a_checkpointed_stream_skips_committed_events_on_replay() -> None:
    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("one two three")])

    agent = Agent(FunctionModel(answer))
    reference: list[str] = []

    def describe(event: Any) -> str:  # without timestamps
        delta = getattr(event, "delta", None)
        return f"{type(event).__name__} {getattr(delta, 'content_delta', '')}"

    async def plain(event: Any) -> None:
        reference.append(describe(event))

    await agent.run("x", event_handler=plain)
    assert len(reference) > 3
    delivered: list[str] = []

    async def sink(event: Any) -> None:
        delivered.append(describe(event))

    async def crashing(event: Any) -> None:
        await sink(event)
        if len(delivered) == 3:
            raise Crash  # delivered, not yet committed

    store = MemoryStreamCheckpointStore()
    with pytest.raises(Crash):
        await agent.run("x", event_handler=CheckpointedStreamSink(crashing, store, "run-s/0"))
    second = CheckpointedStreamSink(sink, store, "run-s/0")
    await agent.run("x", event_handler=second)
    # Events 0 and 1 were committed and are skipped; event 2 comes again (at least once).
    assert delivered == reference[:3] + reference[2:]
    with pytest.raises(DurableError, match="already in use"):
        second.restart("run-s/0")
    second.restart("run-s/1")
    await agent.run("x", event_handler=second)
    assert delivered[-len(reference) :] == reference


async def test_deliver_event_runs_a_side_effect_once_per_key() -> None:
    store = MemoryStreamCheckpointStore()
    sent: list[str] = []

    async def send() -> None:
        sent.append("mail")

    async def ignore(event: Any) -> None: ...

    sink = CheckpointedStreamSink(ignore, store, "c")
    assert await sink.deliver_event("order-1/mail", send)
    again = CheckpointedStreamSink(ignore, store, "c")
    assert not await again.deliver_event("order-1/mail", send)
    assert sent == ["mail"]


async def test_a_replayed_stream_delivers_each_committed_event_once() -> None:
    log: list[str] = []
    model, _, tool = three_steps(log)
    agent = Agent(model, tools=[tool])

    def describe(event: Any) -> str:  # without timestamps
        delta = getattr(event, "delta", None)
        return f"{type(event).__name__} {getattr(delta, 'content_delta', '')}"

    reference: list[str] = []

    async def plain(event: Any) -> None:
        reference.append(describe(event))

    await agent.run("go", event_handler=plain)
    log.clear()
    delivered: list[str] = []

    async def sink(event: Any) -> None:
        delivered.append(describe(event))

    store = MemoryStreamCheckpointStore()
    engine = await crash_once(
        agent,
        "s-1",
        "go",
        ("step.1.model_request", "inside"),
        event_handler=CheckpointedStreamSink(sink, store, "s-1"),
    )
    before = len(delivered)
    assert 0 < before < len(reference)
    with bind(Binding("s-1"), engine):
        await agent.run("go", event_handler=CheckpointedStreamSink(sink, store, "s-1"))
    # Step 0's events are replayed from its record and skipped; the interrupted step 1 streams
    # again from its start, and only its events not committed before the crash are delivered.
    assert delivered == reference
    assert log == ["lookup 0", "lookup 1"]
