"""Agent nodes (B-01 … B-05, B-07 … B-10) and human-in-the-loop pauses, on FunctionModel."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import assert_type

import anyio
import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.agent import AgentStreamEvent
from ferrule.agent import Approved
from ferrule.agent import Denied
from ferrule.agent import HookEvent
from ferrule.agent import InstrumentationSettings
from ferrule.agent import RunContext
from ferrule.agent import RunCorrelation
from ferrule.agent import Tool
from ferrule.agent.exceptions import DecisionError
from ferrule.agent.exceptions import RunCancelledError
from ferrule.agent.exceptions import RunTimeoutError
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import RequestUsage
from ferrule.graph import GraphBuilder
from ferrule.graph import GraphContext
from ferrule.graph import GraphInterrupted
from ferrule.graph import GraphRunStateError
from ferrule.graph import Interrupted
from ferrule.graph import InvalidFanOutError
from ferrule.graph import Join
from ferrule.graph import JsonCodec
from ferrule.graph import ParallelBranch
from ferrule.graph import RunOptions
from ferrule.graph import StepFailed
from ferrule.graph.agent import AgentNodeEvent
from ferrule.graph.agent import AgentRunOptions
from ferrule.graph.agent import CancelToken
from ferrule.graph.agent import Control
from ferrule.graph.agent import Conversation
from ferrule.graph.agent import agent_node

from ._support import chain

pytestmark = pytest.mark.anyio

APPS = Path(__file__).resolve().parent / "apps"


@dataclass
class Deps:
    city: str


Ctx = GraphContext[None, Deps]
Step = Callable[[Ctx, str], Awaitable[str]]


def prompts(messages: Sequence[Message]) -> list[str]:
    return [
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    ]


def echo_model(seen: list[list[str]] | None = None) -> FunctionModel:
    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(prompts(messages))
        return ModelResponse(
            parts=[TextPart(f"echo: {prompts(messages)[-1]}")],
            usage=RequestUsage(input_tokens=5, output_tokens=2),
        )

    return FunctionModel(answer)


def one_node_graph(node: Any, value_type: Any = str):
    g = GraphBuilder[None, Deps, str, Any, Any]()
    g.start(lambda ctx, text: text)
    g.step("ask", node)
    g.end(lambda ctx, value: value)
    g.entry("ask")
    g.finish("ask")
    return g.build()


async def test_buffered_node_injects_graph_deps_and_applies_the_result() -> None:
    seen: list[list[str]] = []
    agent = Agent(echo_model(seen), deps_type=Deps)

    @agent.instructions
    def where(ctx: RunContext[Deps]) -> str:
        return f"You are in {ctx.deps.city}."

    applied: list[AgentRunResult[str]] = []

    def apply(ctx: Ctx, result: AgentRunResult[str]) -> str:
        applied.append(result)
        return result.output.upper()

    node: Step = agent_node(agent, prepare=lambda ctx, text: f"Say {text}", apply=apply)
    out = await one_node_graph(node).run("hi", deps=Deps("Lyon"))
    assert out == "ECHO: SAY HI"
    assert seen == [["Say hi"]]
    assert len(applied) == 1
    assert applied[0].all_messages()[0].instructions == "You are in Lyon."  # type: ignore[union-attr]


async def test_prepare_options_reach_the_run_and_explicit_deps_win() -> None:
    settings_seen: list[Any] = []

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        settings_seen.append(info.model_settings.max_tokens if info.model_settings else None)
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(answer), deps_type=Deps)
    cities: list[str] = []

    @agent.instructions
    def where(ctx: RunContext[Deps]) -> str:
        cities.append(ctx.deps.city)
        return ""

    def prepare(ctx: Ctx, text: str) -> tuple[str, AgentRunOptions]:
        return text, AgentRunOptions(deps=Deps("Oslo"), model_settings=ModelSettings(max_tokens=7))

    node: Step = agent_node(agent, prepare=prepare, apply=lambda ctx, r: r.output)
    await one_node_graph(node).run("x", deps=Deps("Lyon"))
    assert cities == ["Oslo"]
    assert settings_seen == [7]


class Verdict(msgspec.Struct):
    approved: bool
    notes: str


async def test_typed_node_keeps_the_agent_output_type() -> None:
    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        tool = info.output_tools[0].name
        return ModelResponse(
            parts=[ToolCallPart(tool, {"approved": True, "notes": "fine"}, tool_call_id="o1")]
        )

    critic = Agent(FunctionModel(answer), output_type=Verdict)

    def apply(ctx: GraphContext[None, None], result: AgentRunResult[Verdict]) -> bool:
        assert_type(result.output, Verdict)
        return result.output.approved

    g = GraphBuilder[None, None, str, Any, bool]()
    g.start(lambda ctx, text: text)
    g.step("critic", agent_node(critic, prepare=lambda ctx, text: text, apply=apply))
    g.end(lambda ctx, v: bool(v))
    g.entry("critic")
    g.finish("critic")
    assert await g.build().run("review this") is True


async def test_streaming_node_hands_every_event_to_the_handler_then_the_observer() -> None:
    def stream_fn(messages: Sequence[Message], info: AgentInfo) -> Any:
        async def gen() -> Any:
            for piece in ("a", "b", "c"):
                yield piece

        return gen()

    agent = Agent(FunctionModel(stream_function=stream_fn))
    order: list[str] = []
    handled: list[AgentStreamEvent] = []

    def handler(event: AgentStreamEvent) -> None:
        handled.append(event)
        order.append("handler")

    observed: list[AgentNodeEvent] = []

    def observer(event: AgentNodeEvent) -> None:
        observed.append(event)
        if event.kind == "stream":
            assert event.event is handled[-1]
            order.append("observer")

    node: Step = agent_node(
        agent, prepare=lambda ctx, t: t, apply=lambda ctx, r: r.output, stream=handler, observer=observer
    )
    assert await one_node_graph(node).run("go", deps=Deps("x")) == "abc"
    assert len(handled) >= 3
    assert order == ["handler", "observer"] * len(handled)
    kinds = [e.kind for e in observed]
    assert kinds[0] == "start"
    assert kinds[-1] == "end"
    assert kinds.count("stream") == len(handled)
    assert observed[-1].result is not None


async def test_a_failing_stream_handler_aborts_before_apply() -> None:
    drained: list[bool] = []

    def stream_fn(messages: Sequence[Message], info: AgentInfo) -> Any:
        async def gen() -> Any:
            try:
                yield "first"
                await anyio.sleep_forever()
                yield "never"
            finally:
                drained.append(True)

        return gen()

    agent = Agent(FunctionModel(stream_function=stream_fn))
    applied: list[Any] = []
    observed: list[AgentNodeEvent] = []

    class HandlerBroke(Exception):
        pass

    def handler(event: AgentStreamEvent) -> None:
        raise HandlerBroke("no more")

    def apply(ctx: Ctx, result: AgentRunResult[str]) -> str:
        applied.append(result)
        return result.output

    node: Step = agent_node(
        agent,
        prepare=lambda ctx, t: t,
        apply=apply,
        stream=handler,
        observer=observed.append,
    )
    run = await one_node_graph(node).iter("go", deps=Deps("x"))
    with pytest.raises(StepFailed) as info:
        await run.next()
    assert info.value.phase == "stream"
    assert isinstance(info.value.__cause__, HandlerBroke)
    assert applied == []
    assert drained == [True]  # the agent run was cancelled and drained
    failure = observed[-1]
    assert (failure.kind, failure.phase, failure.error_type) == ("failure", "stream", "HandlerBroke")
    with pytest.raises(StepFailed):  # latched: no transition was committed
        await run.next()


@pytest.mark.parametrize("phase", ["prepare", "agent", "apply"])
async def test_failures_become_step_failed_with_phase_and_original_type(phase: str) -> None:
    class Oops(Exception):
        pass

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if phase == "agent":
            raise Oops("model")
        return ModelResponse(parts=[TextPart("ok")])

    def prepare(ctx: Ctx, text: str) -> str:
        if phase == "prepare":
            raise Oops("prepare")
        return text

    def apply(ctx: Ctx, result: AgentRunResult[str]) -> str:
        if phase == "apply":
            raise Oops("apply")
        return result.output

    observed: list[AgentNodeEvent] = []
    node: Step = agent_node(
        Agent(FunctionModel(answer)), prepare=prepare, apply=apply, observer=observed.append
    )
    with pytest.raises(StepFailed) as info:
        await one_node_graph(node).run("x", deps=Deps("x"))
    assert info.value.phase == phase
    assert info.value.node == "ask"
    assert info.value.error_type == "Oops"
    assert isinstance(info.value.__cause__, Oops)
    assert [(e.kind, e.phase, e.error_type) for e in observed] == [
        ("start", None, None),
        ("failure", phase, "Oops"),
    ]


async def test_memory_errors_and_cancellation_are_not_wrapped() -> None:
    def oom(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        raise MemoryError

    node: Step = agent_node(
        Agent(FunctionModel(oom)), prepare=lambda ctx, t: t, apply=lambda ctx, r: r.output
    )
    with pytest.raises(MemoryError):
        await one_node_graph(node).run("x", deps=Deps("x"))

    started = anyio.Event()

    async def slow(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError

    token = CancelToken()
    node: Step = agent_node(
        Agent(FunctionModel(slow)),
        prepare=lambda ctx, t: t,
        apply=lambda ctx, r: r.output,
        control=Control(cancel=token),
    )
    graph = one_node_graph(node)
    errors: list[BaseException] = []

    async def drive() -> None:
        try:
            await graph.run("x", deps=Deps("x"))
        except RunCancelledError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(drive)
        await started.wait()
        token.cancel()
    assert len(errors) == 1
    # A cancelled token refuses later runs before the model is called.
    with pytest.raises(RunCancelledError):
        await graph.run("x", deps=Deps("x"))


@pytest.mark.parametrize(("prepared", "control"), [(60.0, 0.05), (0.05, 60.0)])
async def test_control_timeout_only_tightens(prepared: float, control: float) -> None:
    async def never(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        await anyio.sleep_forever()
        raise AssertionError

    node: Step = agent_node(
        Agent(FunctionModel(never), run_timeout=60),
        prepare=lambda ctx, t: (t, AgentRunOptions(timeout=prepared)),
        apply=lambda ctx, r: r.output,
        control=Control(timeout=control),
    )
    with pytest.raises(StepFailed) as info:
        await one_node_graph(node).run("x", deps=Deps("x"))
    assert isinstance(info.value.__cause__, RunTimeoutError)


async def test_graph_identity_reaches_agent_hooks_and_spans() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("app").start_as_current_span("graph") as graph_span:
        parent = trace.set_span_in_context(graph_span)
    events: list[HookEvent] = []
    agent = Agent(
        echo_model(), hooks=[events.append], instrument=InstrumentationSettings(tracer_provider=provider)
    )
    g = GraphBuilder[None, Deps, str, str, str]()
    g.start(lambda ctx, t: t)
    g.step("draft", agent_node(agent, prepare=lambda ctx, t: t, apply=lambda ctx, r: r.output))
    g.step(
        "revise", agent_node(agent, prepare=lambda ctx, t: t, apply=lambda ctx, r: r.output, name="Revise it")
    )
    g.end(lambda ctx, t: t)
    chain(g, "draft", "revise")
    await g.build().run("x", deps=Deps("x"), options=RunOptions(run_id="graph-7", trace_parent=parent))
    starts = [e.correlation for e in events if e.kind == "run_start"]
    assert starts == [
        RunCorrelation(run_id="graph-7", node_id="draft", node_name="draft"),
        RunCorrelation(run_id="graph-7", node_id="revise", node_name="Revise it"),
    ]
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert [dict(s.attributes or {})["ferrule.graph.node.id"] for s in spans] == ["draft", "revise"]
    for span in spans:
        attrs = dict(span.attributes or {})
        assert attrs["ferrule.run.id"] == "graph-7"
        assert span.parent is not None
        assert span.parent.span_id == graph_span.get_span_context().span_id


async def test_agent_nodes_are_never_fan_out_branches() -> None:
    node: Step = agent_node(Agent(echo_model()), prepare=lambda ctx, t: t, apply=lambda ctx, r: r.output)
    g = GraphBuilder[None, None, str, Any, Any]()
    g.start(lambda ctx, t: t)
    g.fan_out("f", branches=[ParallelBranch("agent", node)], join=Join(list, lambda a, r: [*a, r]))  # type: ignore[arg-type]
    g.end(lambda ctx, v: v)
    g.entry("f")
    g.finish("f")
    with pytest.raises(InvalidFanOutError, match="agent node") as info:
        g.build()
    assert info.value.node == "f"


# --- Conversation (B-09) -------------------------------------------------------------------------


async def test_conversation_copies_history_and_accumulates_usage() -> None:
    first_request = ModelRequest(parts=[UserPromptPart("hello")])
    original: list[Message] = [first_request]
    conversation = Conversation(messages=original)
    first_request.parts.append(UserPromptPart("mutated"))
    assert len(conversation.messages[0].parts) == 1  # a deep copy, not a shared message

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            return ModelResponse(
                parts=[ToolCallPart("lookup", {}, tool_call_id="t1")],
                usage=RequestUsage(input_tokens=10, output_tokens=3, details={"reasoning_tokens": 1}),
            )
        return ModelResponse(parts=[TextPart("done")], usage=RequestUsage(input_tokens=12, output_tokens=4))

    def lookup() -> str:
        """Look it up."""
        return "found"

    agent = Agent(FunctionModel(answer), tools=[lookup])
    first = await agent.run("q1", message_history=conversation.messages)
    conversation.append_run(first)
    second = await agent.run("q2", message_history=conversation.messages)
    conversation.append_run(second)
    assert conversation.runs == 2
    assert conversation.messages == second.all_messages()
    assert conversation.messages is not second.all_messages()
    assert conversation.messages[-1] is not second.all_messages()[-1]
    usage = conversation.usage
    # run 1: tool call + answer; run 2 (whose history already holds the tool result): one answer.
    assert (usage.requests, usage.tool_calls, usage.input_tokens, usage.output_tokens) == (3, 1, 34, 11)
    assert usage.details == {"reasoning_tokens": 1}
    conversation.replace([ModelRequest(parts=[UserPromptPart("fresh")])])
    assert len(conversation.messages) == 1
    assert conversation.usage.requests == 3
    # It serializes inside a state Struct, so graph snapshots can carry it.
    codec = JsonCodec(Conversation, int)
    again = codec.decode_state(codec.encode_state(conversation))
    assert again.messages == conversation.messages
    assert again.usage == conversation.usage


# --- human in the loop ----------------------------------------------------------------------------


def paying_agent(log: list[str]) -> Agent[None, str]:
    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        results = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        log.append("model:" + ("after" if results else "first"))
        if results:
            return ModelResponse(parts=[TextPart(f"result: {results[-1].content}")])
        return ModelResponse(parts=[ToolCallPart("pay", {"amount": 3}, tool_call_id="c1")])

    def pay(amount: int) -> str:
        """Pay."""
        log.append(f"pay:{amount}")
        return "paid"

    return Agent(FunctionModel(answer), tools=[Tool(pay, requires_approval=True)])


def approval_graph(log: list[str]):
    g = GraphBuilder[None, None, str, str, str](definition_id="pay")
    g.start(lambda ctx, t: t)

    def before(ctx: GraphContext[None, None], t: str) -> str:
        log.append("before")
        return t

    g.step("before", before)
    g.step("pay", agent_node(paying_agent(log), prepare=lambda ctx, t: t, apply=lambda ctx, r: r.output))
    g.end(lambda ctx, t: t)
    chain(g, "before", "pay")
    return g.build()


async def test_an_agent_pause_pauses_the_graph_and_resumes_in_place() -> None:
    log: list[str] = []
    run = await approval_graph(log).iter("pay")
    assert await run.next() is not None
    paused = await run.next()
    assert isinstance(paused, Interrupted)
    assert [p.tool_name for p in paused.interrupt.pending] == ["pay"]
    assert run.interrupt is paused.interrupt
    assert run.completed_steps == 1  # the agent node is not complete
    with pytest.raises(GraphRunStateError, match="decisions"):
        await run.next()
    with pytest.raises(DecisionError):  # wrong decisions are refused and the pause still waits
        await run.resume({"nope": Approved()})
    assert run.interrupt is not None
    end = await run.resume({"c1": Approved()})
    assert run.output == "result: paid"
    assert end is not None
    assert log == ["before", "model:first", "pay:3", "model:after"]


async def test_denied_calls_continue_the_agent_with_the_denial() -> None:
    log: list[str] = []
    run = await approval_graph(log).iter("pay")
    await run.next()
    await run.next()
    await run.resume({"c1": Denied(message="not today")})
    assert run.output == "result: not today"
    assert "pay:3" not in log


async def test_graph_run_raises_graph_interrupted_with_the_run() -> None:
    log: list[str] = []
    with pytest.raises(GraphInterrupted) as info:
        await approval_graph(log).run("pay")
    run = info.value.run
    await run.resume({"c1": Approved()})
    assert run.output == "result: paid"


async def test_a_paused_snapshot_resumes_without_replaying_nodes_or_the_request() -> None:
    log: list[str] = []
    codec = JsonCodec(type(None), str)
    run = await approval_graph(log).iter("pay")
    await run.next()
    await run.next()
    data = run.snapshot(codec)
    log.clear()
    fresh = approval_graph(log).resume_snapshot(data, codec)  # a new graph and agent: as in another process
    assert fresh.interrupt is not None
    assert [p.tool_name for p in fresh.interrupt.pending] == ["pay"]
    await fresh.resume({"c1": Approved()})
    assert fresh.output == "result: paid"
    assert log == ["pay:3", "model:after"]  # no "before", no "model:first"


def test_human_in_the_loop_across_two_processes(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.json"
    log = tmp_path / "log.txt"
    app = str(APPS / "approval_graph.py")

    def run_app(command: str) -> str:
        done = subprocess.run(
            [sys.executable, app, command, str(snapshot), str(log)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run_app("start") == "paused at payer ['pay']"
    assert log.read_text().splitlines() == ["step prepare_request", "model request first"]
    assert run_app("resume") == "paid 250 to alice (2 requests) prepared 1"
    assert log.read_text().splitlines() == [
        "step prepare_request",
        "model request first",
        "pay alice 250",
        "model request after tool",
    ]
