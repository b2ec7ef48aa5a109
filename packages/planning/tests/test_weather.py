"""M-16: the 002 weather example offline, with a FunctionModel planner (docs/examples/plan_weather.py)."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

import pytest

from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ToolCallPart
from ferrule.planning import PlanBudget
from ferrule.planning import PlanError
from ferrule.planning import PlanStepError
from ferrule.planning import StepSkippedEvent
from tests.support.examples import load_example
from tests.support.examples import run_example

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return load_example("plan_weather")


async def run_city(example: ModuleType, city: str, **options: Any) -> tuple[Any, list[Any]]:
    example.CALLS.clear()
    events: list[Any] = []

    async def handler(event: Any) -> None:
        events.append(event)

    agent = example.build_agent(FunctionModel(example.scripted), **options)
    result = await agent.run(
        f"Plan tonight's activities in {city} based on the weather", event_handler=handler
    )
    return result, events


async def test_condition_true_binds_the_temperature_and_skips_indoor(example: ModuleType) -> None:
    result, events = await run_city(example, "Shenzhen")
    assert example.CALLS == [
        "weather_current(Shenzhen)",
        "weather_backup(Shenzhen)",
        "activity_outdoor(Shenzhen, 27)",
        "itinerary_compose(Shenzhen)",
    ]
    assert result.report.steps["outdoor"].input == {"city": "Shenzhen", "temperature": 27}
    assert [(e.step_id, e.reason) for e in events if isinstance(e, StepSkippedEvent)] == [
        ("indoor", "condition false: /outdoor_suitable of 'weather' is true, not false")
    ]
    assert result.output == (
        "Shenzhen: sunny, 27 °C. Tonight: a walk along the bay, then a table for two at 20:00 in Shenzhen."
    )


async def test_condition_false_runs_the_indoor_branch_and_never_calls_outdoor(example: ModuleType) -> None:
    result, _ = await run_city(example, "Oslo")
    assert "activity_indoor(Oslo)" in example.CALLS
    assert not any(call.startswith("activity_outdoor") for call in example.CALLS)
    assert result.report.steps["outdoor"].status == "skipped"
    assert result.report.steps["outdoor"].input is None


async def test_the_failed_required_step_is_repaired_by_one_replan(example: ModuleType) -> None:
    result, _ = await run_city(example, "Shenzhen")
    assert result.stats.replans == 1
    assert result.report.revision == 2
    assert result.report.steps["weather@1"].error == "the primary weather service is unavailable (HTTP 503)"
    assert result.report.steps["weather"].capability == "weather_backup"
    # Nothing that succeeded ran twice; the replacement ran once.
    assert [c.split("(")[0] for c in example.CALLS].count("weather_backup") == 1
    assert result.stats.model_calls == 3


async def test_a_second_failure_exceeding_max_replans_fails_the_run(example: ModuleType) -> None:
    def stubborn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if [t.name for t in info.output_tools] == ["Patch"]:
            steps = example.plan_for("Shenzhen", "weather_current")[:1]
            return ModelResponse(parts=[ToolCallPart("Patch", {"replace": ["weather"], "steps": steps})])
        return example.scripted(messages, info)

    example.CALLS.clear()
    agent = example.build_agent(FunctionModel(stubborn))
    with pytest.raises(PlanStepError, match="max_replans=1 replan") as raised:
        await agent.run("Plan tonight's activities in Shenzhen based on the weather")
    assert example.CALLS == ["weather_current(Shenzhen)", "weather_current(Shenzhen)"]
    assert raised.value.report is not None
    assert raised.value.report.stats.replans == 1


def _planned(example: ModuleType, steps: list[dict[str, Any]]) -> FunctionModel:
    def reply(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if [t.name for t in info.output_tools] == ["Plan"]:
            return ModelResponse(parts=[ToolCallPart("Plan", {"version": 1, "steps": steps})])
        return example.scripted(messages, info)

    return FunctionModel(reply)


async def test_a_cycle_is_rejected_before_any_tool_runs(example: ModuleType) -> None:
    steps = example.plan_for("Shenzhen", "weather_backup")
    steps[0]["depends_on"] = ["compose"]
    example.CALLS.clear()
    with pytest.raises(PlanError, match="cycle: 'weather' -> 'compose' -> 'outdoor' -> 'weather'") as raised:
        await example.build_agent(_planned(example, steps)).run("Plan tonight in Shenzhen")
    assert raised.value.step_id == "weather"
    assert example.CALLS == []


async def test_a_condition_on_a_non_dependency_is_rejected_before_any_tool_runs(example: ModuleType) -> None:
    steps = example.plan_for("Shenzhen", "weather_backup")
    steps[2]["depends_on"] = []
    example.CALLS.clear()
    with pytest.raises(
        PlanError, match="condition reads step 'weather', which is not one of its dependencies"
    ) as raised:
        await example.build_agent(_planned(example, steps)).run("Plan tonight in Shenzhen")
    assert raised.value.step_id == "indoor"
    assert example.CALLS == []


async def test_the_weather_plan_fits_the_default_budget_exactly_where_it_should(example: ModuleType) -> None:
    # plan + patch + composer = 3 model calls; 4 steps across 4 batches (the failed one included).
    result, _ = await run_city(
        example, "Oslo", budget=PlanBudget(max_model_calls=3, max_batches=4, max_tool_calls=4)
    )
    assert (result.stats.model_calls, result.stats.batches, result.stats.tool_calls) == (3, 4, 4)


def test_the_example_script_prints_both_branches() -> None:
    out = run_example("plan_weather.py")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "Shenzhen: sunny, 27 °C. Tonight: a walk along the bay, then a table for two at 20:00 in Shenzhen.",
        "  calls: weather_current(Shenzhen), weather_backup(Shenzhen), activity_outdoor(Shenzhen, 27), itinerary_compose(Shenzhen)",
        "  skipped: indoor (condition false: /outdoor_suitable of 'weather' is true, not false)",
        "  revision=2 replans=1 batches=4 steps=4 tool_calls=4 model_calls=3",
        "Oslo: rain, 6 °C. Tonight: the city museum's late opening, then a table for two at 20:00 in Oslo.",
        "  calls: weather_current(Oslo), weather_backup(Oslo), activity_indoor(Oslo), itinerary_compose(Oslo)",
        "  skipped: outdoor (condition false: /outdoor_suitable of 'weather' is false, not true)",
        "  revision=2 replans=1 batches=4 steps=4 tool_calls=4 model_calls=3",
    ]


def test_the_household_example_runs_offline() -> None:
    out = run_example("plan_household.py")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == (
        "Ordered milk and eggs (order A-1001, Saturday 10:00); it will rain, so the laundry goes in the "
        "dryer and the garden waits. The family board is updated."
    )
    calls = lines[1].removeprefix("  calls: ").split("; ")
    # Batches: fridge + forecast, then groceries (fails) + laundry, then the retried order, then the board.
    assert sorted(calls[:2]) == ["fridge_inventory", "weather_forecast(Utrecht)"]
    assert sorted(calls[2:4]) == ["laundry_plan(rain=True)", "order_groceries(milk, eggs)"]
    assert calls[4:] == ["order_groceries(milk, eggs)", "family_board(A-1001)"]
    assert not any(c.startswith("garden_chores") for c in calls)
    assert lines[2:] == [
        "  actions: order_groceries=failed, order_groceries=succeeded, family_board=succeeded",
        "  skipped: garden",
        "  revision=2 replans=1 batches=4 steps=6 tool_calls=6 model_calls=3",
    ]
