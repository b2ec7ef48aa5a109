"""End-to-end: the planning examples on the embedded local model (qwen2.5-coder-0.5b via llama.cpp).

The model plans through constrained JSON: its profile has JSON-schema output and emulated tools, so
the planner sends the numbered plan schema as the response format and llama.cpp's grammar enforces
it. What a 0.5B model plans is its own business; these tests assert what must hold whatever it
plans: the plan validates, every step that ran called its tool with an input valid for that tool,
skipped steps' tools were never called, the budget held, and an answer was composed.

One server for the module, one inference thread (FERRULE_LLAMACPP_THREADS), temperature 0, short
outputs; one test per anyio backend to stay within CI's time.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ferrule.core.json_schema import compile_validator
from ferrule.core.settings import ModelSettings
from ferrule.planning import PlanBudget
from ferrule.planning import PlanCreatedEvent
from ferrule.planning import PlanningResult
from ferrule.planning import ReplanEvent
from ferrule.planning import StepSkippedEvent
from ferrule.planning import StepStartEvent
from ferrule.planning import validate_plan
from ferrule.providers.llamacpp import LlamaCppServer
from ferrule.providers.llamacpp import ModelDownloadError
from ferrule.providers.llamacpp import ensure_model

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"
MODEL = "qwen2.5-coder-0.5b"
THREADS = int(os.environ.get("FERRULE_LLAMACPP_THREADS", "1"))
SETTINGS = ModelSettings(temperature=0, seed=7, max_tokens=500)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"e2e_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaCppServer]:
    try:
        ensure_model(MODEL)
    except ModelDownloadError as exc:
        pytest.skip(f"the end-to-end model {MODEL} cannot be downloaded: {exc}")
    with LlamaCppServer(MODEL, threads=THREADS) as running:
        yield running


async def run_recorded(agent: Any, prompt: str) -> tuple[PlanningResult, list[Any]]:
    events: list[Any] = []

    async def handler(event: Any) -> None:
        events.append(event)

    return await agent.run(prompt, event_handler=handler), events


def check_invariants(agent: Any, result: PlanningResult, events: list[Any], calls: list[str]) -> None:
    created = [e for e in events if isinstance(e, PlanCreatedEvent)]
    assert len(created) == 1
    plan = created[0].plan
    assert validate_plan(plan, agent.catalog, max_steps=agent.budget.max_steps) == plan
    assert [s.id for s in plan.steps] == [f"s{i + 1}" for i in range(len(plan.steps))]  # the numbered schema
    started = [e for e in events if isinstance(e, StepStartEvent) and e.capability is not None]
    assert started, "no step ran"
    for event in started:
        tool = agent.catalog.tools[event.capability]
        compile_validator(tool.parameters_json_schema).validate(event.input)
    skipped = {e.step_id for e in events if isinstance(e, StepSkippedEvent)}
    assert not skipped & {e.step_id for e in started}
    # Each tool was called exactly as often as steps calling it started: skipped ones never.
    for name in agent.catalog.tools:
        made = sum(1 for call in calls if call.split("(")[0] == name)
        assert made == sum(1 for e in started if e.capability == name), name
    stats = result.stats
    budget = agent.budget
    assert stats.model_calls <= budget.max_model_calls
    assert stats.tool_calls <= budget.max_tool_calls
    assert stats.batches <= budget.max_batches
    assert result.output.strip()
    assert result.usage().requests == stats.model_calls


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_weather_plan_on_the_local_model(server: LlamaCppServer) -> None:
    weather = example("plan_weather")
    weather.PRIMARY["up"] = True
    agent = weather.build_agent(
        server.model(), model_settings=SETTINGS, budget=PlanBudget(max_steps=5, max_model_calls=6)
    )
    result, events = await run_recorded(agent, "Plan tonight's activities in Shenzhen based on the weather")
    check_invariants(agent, result, events, weather.CALLS)
    assert result.mode == "complex"


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_the_household_workflow_on_the_local_model(server: LlamaCppServer) -> None:
    household = example("plan_household")
    household.CALLS.clear()
    agent = household.build_agent(server.model(), model_settings=SETTINGS)
    result, events = await run_recorded(agent, household.REQUEST)
    check_invariants(agent, result, events, household.CALLS)
    orders = [a for a in result.actions if a.tool_name == "order_groceries"]
    if orders:
        # The store fails the first order, whatever the plan; a required order is repaired by a replan.
        assert orders[0].status == "failed"
        created = next(e for e in events if isinstance(e, PlanCreatedEvent))
        first = next(s for s in created.plan.steps if s.id == orders[0].step_id)
        if first.required:
            assert [e for e in events if isinstance(e, ReplanEvent)]
            assert result.stats.replans == 1
            assert orders[-1].status == "succeeded"
        else:
            assert [w.kind for w in result.warnings if w.step_id == first.id] == ["optional_step_failed"]
