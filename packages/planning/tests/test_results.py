"""The answer (M-13), stream events (M-14) and routing (M-15)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from ferrule.agent import FinalResultEvent
from ferrule.agent import Tool
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.planning import ROUTE_TOOL
from ferrule.planning import PlanBudget
from ferrule.planning import PlanBudgetExceeded
from ferrule.planning import PlanCreatedEvent
from ferrule.planning import PlanError
from ferrule.planning import PlanningAgent
from ferrule.planning import StepStartEvent

from .conftest import Recorder
from .conftest import Script
from .conftest import evidence_of
from .conftest import plan
from .conftest import step

pytestmark = pytest.mark.anyio

WEATHER = plan(
    step("weather", "weather"),
    step(
        "outdoor",
        "lookup",
        depends_on=["weather"],
        condition={"source_step": "weather", "source_path": "/sunny", "equals": True},
    ),
    step("save", "save", depends_on=["weather"]),
)


def weather_agent(script: Script, tools: Recorder, **options: Any) -> PlanningAgent:
    return PlanningAgent(
        script.model(),
        tools=[
            tools.tool("weather", {"sunny": False, "temperature": 9}),
            tools.tool("lookup", "walk"),
            tools.tool("save", "saved", side_effect="non_idempotent"),
        ],
        **options,
    )


# --- M-13: composer, evidence, actions, warnings, statistics ---------------------------------------


async def test_the_composer_turns_evidence_into_the_answer() -> None:
    def answer(evidence: dict[str, Any]) -> str:
        weather = next(s for s in evidence["steps"] if s["step"] == "weather")
        return f"It is {weather['output']['temperature']} degrees."

    tools, script = Recorder(), Script([WEATHER], answer=answer)
    result = await weather_agent(script, tools).run("What should I do in Oslo tonight?")
    assert result.output == "It is 9 degrees."
    assert result.mode == "complex"
    role, messages, info = script.calls[-1]
    assert role == "compose"
    assert list(info.function_tools) == []
    assert list(info.output_tools) == []
    assert evidence_of(messages) == {
        "steps": [
            {
                "step": "weather",
                "capability": "weather",
                "status": "succeeded",
                "output": {"sunny": False, "temperature": 9},
            },
            {
                "step": "outdoor",
                "capability": "lookup",
                "status": "skipped",
                "note": "condition false: /sunny of 'weather' is false, not true",
            },
            {"step": "save", "capability": "save", "status": "succeeded", "output": "saved"},
        ],
        "warnings": ["condition false: /sunny of 'weather' is false, not true"],
    }
    assert "Request: What should I do in Oslo tonight?" in str(messages[0])
    assert [(e.step_id, e.capability, e.value) for e in result.evidence] == [
        ("weather", "weather", {"sunny": False, "temperature": 9}),
        ("save", "save", "saved"),
    ]
    assert result.evidence_of("weather").get("/temperature") == 9
    assert [(a.step_id, a.tool_name, a.status, a.side_effect) for a in result.actions] == [
        ("save", "save", "succeeded", "non_idempotent")
    ]
    assert result.actions[0].tool_call_id == result.evidence[1].tool_call_id
    assert [(w.kind, w.step_id) for w in result.warnings] == [("step_skipped", "outdoor")]
    stats = result.stats
    assert (
        stats.steps,
        stats.skipped,
        stats.failed,
        stats.batches,
        stats.model_calls,
        stats.tool_calls,
        stats.replans,
    ) == (
        2,
        1,
        0,
        2,
        2,
        2,
        0,
    )
    assert min(stats.planning_seconds, stats.execution_seconds, stats.composing_seconds) >= 0
    assert stats.total_seconds >= stats.planning_seconds + stats.execution_seconds + stats.composing_seconds
    assert (result.usage().requests, result.usage().tool_calls) == (2, 2)


# --- M-14: stream events -----------------------------------------------------------------------------


async def test_stream_events_come_in_lifecycle_order_then_the_composers_events() -> None:
    tools = Recorder()
    failing = plan(step("weather", "broken"), step("save", "save", depends_on=["weather"]))
    script = Script(
        [failing],
        patches=[{"replace": ["weather"], "steps": [step("weather", "weather")]}],
        answer="Stay in.",
    )
    agent = PlanningAgent(
        script.model(),
        tools=[
            tools.tool("weather", {"sunny": False}),
            tools.tool("broken", fail=RuntimeError("down")),
            tools.tool("save", "saved", side_effect="idempotent"),
        ],
    )
    async with agent.run_stream("go", trace="trace-7") as stream:
        events = [event async for event in stream]
    plan_events = [e for e in events if hasattr(e, "event_kind")]
    kinds = [e.event_kind for e in plan_events]
    assert kinds == [
        "plan_created",
        "batch_start",
        "step_start",
        "step_failed",
        "batch_end",
        "replan",
        "plan_revised",
        "batch_start",
        "step_start",
        "step_end",
        "batch_end",
        "batch_start",
        "step_start",
        "step_end",
        "batch_end",
        "completed",
    ]
    assert {e.trace for e in plan_events} == {"trace-7"}
    assert len({e.run_id for e in plan_events}) == 1
    assert [e.revision for e in plan_events] == [1] * 5 + [2] * 11  # `replan` names the new revision
    tail = events[len(plan_events) :]
    assert isinstance(tail[0], PartStartEvent)
    assert any(isinstance(e, PartDeltaEvent) for e in tail)
    assert any(isinstance(e, ResponseCompleted) for e in tail)
    assert isinstance(tail[-1], FinalResultEvent)
    assert tail[-1].output == "Stay in."
    assert stream.result.output == "Stay in."
    assert stream.result.stats.replans == 1
    created = events[0]
    assert isinstance(created, PlanCreatedEvent)
    assert [s.id for s in created.plan.steps] == ["weather", "save"]


async def test_leaving_a_stream_early_cancels_the_run() -> None:
    state: list[str] = []

    async def hang(args: dict[str, Any]) -> str:
        state.append("started")
        try:
            await anyio.sleep_forever()
        finally:
            state.append("cancelled")
        raise AssertionError("unreachable")

    tool = Tool.from_schema(
        hang, name="hang", parameters_json_schema={"type": "object", "properties": {}}, takes_ctx=False
    )
    agent = PlanningAgent(Script([plan({"id": "h", "capability": "hang"})]).model(), tools=[tool])
    async with agent.run_stream("go") as stream:
        async for event in stream:
            if isinstance(event, StepStartEvent):
                break
    assert state == ["started", "cancelled"]
    with pytest.raises(UserError, match="has not finished"):
        _ = stream.result


async def test_stream_errors_are_raised_from_the_iteration() -> None:
    agent = PlanningAgent(
        Script([plan(step("a", depends_on=["a"]))]).model(), tools=[Recorder().tool("lookup")], plan_retries=0
    )
    seen: list[Any] = []

    async def consume() -> None:
        async with agent.run_stream("go") as stream:
            async for event in stream:
                seen.append(event)

    with pytest.raises(PlanError, match="cannot depend on itself"):
        await consume()
    assert seen == []


# --- M-15: routing --------------------------------------------------------------------------------


def chat_model(tools_called: list[str]) -> FunctionModel:
    """Answers chat-mode requests: calls `save` once, then answers."""

    def reply(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        tools_called.append(",".join(t.name for t in info.function_tools))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if not any(isinstance(p, ToolReturnPart) for p in last.parts):
            return ModelResponse(parts=[ToolCallPart("save", {"city": "Oslo"})])
        return ModelResponse(parts=[TextPart("Saved it.")])

    return FunctionModel(reply)


async def test_chat_mode_runs_the_plain_agent_loop_over_the_catalog() -> None:
    tools, offered = Recorder(), list[str]()
    agent = PlanningAgent(
        chat_model(offered),
        tools=[tools.tool("weather", {}), tools.tool("save", "ok", side_effect="non_idempotent")],
    )
    events: list[Any] = []

    async def handler(event: Any) -> None:
        events.append(event)

    result = await agent.run("save Oslo", mode="chat", event_handler=handler)
    assert result.output == "Saved it."
    assert result.mode == "chat"
    assert offered == ["weather,save", "weather,save"]
    assert tools.names() == ["save"]
    assert result.report.plan is None
    assert [(a.step_id, a.tool_name, a.status) for a in result.actions] == [(None, "save", "succeeded")]
    assert [(e.capability, e.value) for e in result.evidence] == [("save", "ok")]
    assert (result.stats.model_calls, result.stats.tool_calls, result.stats.batches) == (2, 1, 0)
    assert isinstance(events[-1], FinalResultEvent)


async def test_chat_mode_shares_the_budget() -> None:
    tools = Recorder()
    agent = PlanningAgent(
        chat_model([]),
        tools=[tools.tool("save", "ok", side_effect="non_idempotent")],
        budget=PlanBudget(max_model_calls=1),
    )
    with pytest.raises(
        PlanBudgetExceeded, match=r"chat mode would exceed PlanBudget\.max_model_calls=1"
    ) as raised:
        await agent.run("save it", mode="chat")
    assert tools.names() == ["save"]
    assert raised.value.report is not None
    assert [a.status for a in raised.value.report.actions] == ["succeeded"]


def maybe(prompt: str) -> str:
    return "maybe"


async def test_a_router_function_selects_the_mode() -> None:
    tools = Recorder()
    seen: list[str] = []

    def router(prompt: str) -> str:
        seen.append(prompt)
        return "chat" if len(prompt) < 20 else "complex"

    script = Script([plan(step("a", "weather"))], answer="planned")
    agent = PlanningAgent(script.model(), tools=[tools.tool("weather", 1)], router=router)  # type: ignore[arg-type]
    assert (await agent.run("hello")).mode == "chat"
    complex_result = await agent.run("plan a whole trip around the weather")
    assert (complex_result.mode, complex_result.output) == ("complex", "planned")
    assert seen == ["hello", "plan a whole trip around the weather"]
    assert (await agent.run("plan a whole trip around the weather", mode="chat")).mode == "chat"
    with pytest.raises(UserError, match="must return 'chat' or 'complex'"):
        await PlanningAgent(script.model(), tools=[tools.tool("weather", 1)], router=maybe).run("x")  # pyright: ignore[reportArgumentType]


async def test_the_model_router_is_one_forced_output_call_within_the_budget() -> None:
    tools = Recorder()
    script = Script([plan(step("a", "weather"))], routes=["complex"])
    agent = PlanningAgent(
        script.model(), tools=[tools.tool("weather", 1)], router="model", budget=PlanBudget(max_model_calls=3)
    )
    result = await agent.run("go")
    assert script.roles() == [ROUTE_TOOL, "Plan", "compose"]
    info = script.calls[0][2]
    assert [t.name for t in info.output_tools] == [ROUTE_TOOL]
    assert info.model_settings.tool_choice == [ROUTE_TOOL]
    assert result.stats.model_calls == 3
    script = Script(routes=["chat"], answer="hi")
    result = await PlanningAgent(script.model(), tools=[tools.tool("weather", 1)], router="model").run("hi")
    assert (result.mode, script.roles()) == ("chat", [ROUTE_TOOL, "chat"])


async def test_default_mode_and_argument_checks() -> None:
    tools = Recorder()
    script = Script(answer="plain")
    agent = PlanningAgent(script.model(), tools=[tools.tool("weather", 1)], default_mode="chat")
    assert (await agent.run("hi")).mode == "chat"
    with pytest.raises(UserError, match="mode must be"):
        await agent.run("hi", mode="fast")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="non-empty text prompt"):
        await agent.run("  ")
    with pytest.raises(UserError, match="default_mode"):
        PlanningAgent(script.model(), tools=[tools.tool("weather", 1)], default_mode="auto")  # type: ignore[arg-type]


def test_run_sync() -> None:
    tools = Recorder()
    doc = plan(step("a", "weather"))
    agent = PlanningAgent(Script([doc, doc], answer="sync").model(), tools=[tools.tool("weather", 1)])
    assert agent.run_sync("go").output == "sync"
    assert agent.run_sync("go", backend="trio").output == "sync"
    assert tools.names() == ["weather", "weather"]


async def test_run_sync_is_refused_inside_an_event_loop() -> None:
    tools = Recorder()
    agent = PlanningAgent(Script([plan(step("a", "weather"))]).model(), tools=[tools.tool("weather", 1)])
    with pytest.raises(
        UserError, match=r"^run_sync\(\) cannot be called from async code; use `await agent.run\(...\)`$"
    ):
        agent.run_sync("go")
    assert tools.names() == []
