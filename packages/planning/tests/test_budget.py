"""PlanBudget (M-12): every limit at exactly its value and one past it."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ferrule.agent import Tool
from ferrule.planning import PlanBudget
from ferrule.planning import PlanBudgetExceeded
from ferrule.planning import PlanError
from ferrule.planning import PlanningAgent
from ferrule.planning import PlanStepError
from ferrule.planning import PlanTimeoutError

from .conftest import Recorder
from .conftest import Script
from .conftest import plan
from .conftest import step

pytestmark = pytest.mark.anyio

CHAIN = plan(step("a"), step("b", depends_on=["a"]), step("c", depends_on=["b"]))
CYCLIC = plan(step("a", depends_on=["a"]))


def agent(script: Script, tools: Recorder, **budget: Any) -> PlanningAgent:
    return PlanningAgent(script.model(), tools=[tools.tool("lookup", {"t": 1})], budget=PlanBudget(**budget))


def test_budget_values_are_checked() -> None:
    for field, value in (
        ("max_steps", 0),
        ("max_batches", 0),
        ("max_parallel_steps", 0),
        ("max_model_calls", -1),
        ("max_tool_calls", -1),
        ("max_replans", -1),
        ("max_step_output_bytes", 0),
        ("hard_timeout", 0),
        ("max_steps", True),
    ):
        with pytest.raises(ValueError, match=f"PlanBudget.{field}"):
            PlanBudget(**{field: value})


async def test_max_steps() -> None:
    tools = Recorder()
    result = await agent(Script(), tools, max_steps=3).execute(CHAIN, "go")
    assert result.stats.steps == 3
    with pytest.raises(PlanError, match=r"PlanBudget\.max_steps=2") as raised:
        await agent(Script(), tools, max_steps=2).execute(CHAIN, "go")
    assert raised.value.step_id == "c"
    assert tools.names() == ["lookup"] * 3


async def test_max_batches() -> None:
    tools = Recorder()
    result = await agent(Script([CHAIN]), tools, max_batches=3).run("go")
    assert result.stats.batches == 3
    tools = Recorder()
    with pytest.raises(
        PlanBudgetExceeded, match=r"batch 3 \(steps c\) would exceed PlanBudget.max_batches=2"
    ) as raised:
        await agent(Script([CHAIN]), tools, max_batches=2).run("go")
    assert (raised.value.budget, raised.value.maximum) == ("max_batches", 2)
    assert tools.names() == ["lookup", "lookup"]
    report = raised.value.report
    assert report is not None
    assert report.stats.batches == 2
    assert report.steps["c"].status == "pending"


async def test_max_tool_calls_sequential_and_within_one_batch() -> None:
    tools = Recorder()
    result = await agent(Script([CHAIN]), tools, max_tool_calls=3).run("go")
    assert result.stats.tool_calls == 3
    tools = Recorder()
    with pytest.raises(PlanBudgetExceeded, match=r"the 1 tool call\(s\) of batch 3 after 2 made") as raised:
        await agent(Script([CHAIN]), tools, max_tool_calls=2).run("go")
    assert raised.value.budget == "max_tool_calls"
    assert tools.names() == ["lookup", "lookup"]
    wide = plan(step("a"), step("b"), step("c"))
    tools = Recorder()
    await agent(Script([wide]), tools, max_tool_calls=3).run("go")
    assert tools.names() == ["lookup"] * 3
    tools = Recorder()
    with pytest.raises(PlanBudgetExceeded, match="max_tool_calls=2"):
        await agent(Script([wide]), tools, max_tool_calls=2).run("go")
    assert tools.calls == []  # the whole batch is refused before any of its calls


async def test_max_model_calls_for_plan_and_compose() -> None:
    tools, script = Recorder(), Script([CHAIN])
    result = await agent(script, tools, max_model_calls=2).run("go")
    assert result.stats.model_calls == 2
    assert result.usage().requests == 2
    tools, script = Recorder(), Script([CHAIN])
    with pytest.raises(
        PlanBudgetExceeded, match=r"planning the request would exceed PlanBudget\.max_model_calls=1"
    ):
        await agent(script, tools, max_model_calls=1).run("go")
    assert script.calls == []  # one call is kept back for the composer: planning never starts
    assert tools.calls == []


async def test_max_model_calls_counts_planner_retries() -> None:
    tools, script = Recorder(), Script([CYCLIC, CHAIN])
    result = await agent(script, tools, max_model_calls=3).run("go")
    assert script.roles() == ["Plan", "Plan", "compose"]
    assert result.stats.model_calls == 3
    tools, script = Recorder(), Script([CYCLIC, CHAIN])
    with pytest.raises(PlanBudgetExceeded, match="max_model_calls=2") as raised:
        await agent(script, tools, max_model_calls=2).run("go")
    assert script.roles() == ["Plan"]
    assert any("cannot depend on itself" in note for note in raised.value.__notes__)
    assert tools.calls == []


async def test_max_model_calls_for_a_replan() -> None:
    def tools_of(recorder: Recorder) -> list[Tool[Any]]:
        return [recorder.tool("lookup", 1), recorder.tool("broken", fail=RuntimeError("down"))]

    doc = plan(step("a", "broken"))
    patch = {"replace": ["a"], "steps": [step("a", "lookup")]}
    tools, script = Recorder(), Script([doc], patches=[patch])
    result = await PlanningAgent(
        script.model(), tools=tools_of(tools), budget=PlanBudget(max_model_calls=3)
    ).run("go")
    assert script.roles() == ["Plan", "Patch", "compose"]
    assert result.stats.model_calls == 3
    tools, script = Recorder(), Script([doc], patches=[patch])
    with pytest.raises(
        PlanBudgetExceeded,
        match=r"replanning after step 'a' failed would exceed PlanBudget\.max_model_calls=2",
    ):
        await PlanningAgent(script.model(), tools=tools_of(tools), budget=PlanBudget(max_model_calls=2)).run(
            "go"
        )
    assert script.roles() == ["Plan"]
    assert tools.names() == ["broken"]


async def test_max_step_output_bytes() -> None:
    for size, ok in ((10, True), (11, False)):
        tools = Recorder()
        script = Script([plan(step("a"))])
        planning = PlanningAgent(
            script.model(),
            tools=[tools.tool("lookup", "x" * size)],
            budget=PlanBudget(max_step_output_bytes=12, max_replans=0),
        )
        if ok:
            result = await planning.run("go")
            assert result.evidence_of("a").value == "x" * 10  # 12 bytes of JSON: exactly the limit
        else:
            with pytest.raises(
                PlanStepError, match=r"output of 13 bytes exceeds PlanBudget\.max_step_output_bytes=12"
            ):
                await planning.run("go")


async def test_hard_timeout_cancels_in_flight_steps_and_records_unknown_outcomes() -> None:
    finished: list[str] = []

    async def hang(args: dict[str, Any]) -> str:
        try:
            await anyio.sleep_forever()
        finally:
            finished.append("cancelled")
        raise AssertionError("unreachable")

    tools = Recorder()
    sender = Tool.from_schema(
        hang, name="send", parameters_json_schema={"type": "object", "properties": {}}, takes_ctx=False
    )
    doc = plan({"id": "send", "capability": "send"}, step("read"))
    planning = PlanningAgent(
        Script([doc]).model(), tools=[sender, tools.tool("lookup", 1)], budget=PlanBudget(hard_timeout=0.2)
    )
    with pytest.raises(PlanTimeoutError, match=r"hard_timeout=0\.2") as raised:
        await planning.run("go")
    assert finished == ["cancelled"]
    report = raised.value.report
    assert report is not None
    assert [(a.tool_name, a.status) for a in report.actions] == [("send", "unknown")]
    assert report.steps["send"].status == "unknown"
    assert report.steps["read"].status == "succeeded"
    result = await PlanningAgent(
        Script([CHAIN]).model(), tools=[tools.tool("lookup", 1)], budget=PlanBudget(hard_timeout=60)
    ).run("go")
    assert result.stats.steps == 3
