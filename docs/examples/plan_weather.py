"""Plan tonight's activities from the weather: the complex-task example of zhizhi (seed 002).

A planner writes a plan document over four tools: fetch the weather, then EITHER an outdoor
activity (condition `/outdoor_suitable == true`, with the temperature bound into its input) OR an
indoor one (`== false`), then compose an itinerary. The branch whose condition is false is
skipped and its tool never called. The primary weather service is down, so the required `weather`
step fails once; one replan replaces it with the backup service and keeps everything else.

Runs offline with a scripted FunctionModel as planner, replanner and composer:

    python docs/examples/plan_weather.py            # Shenzhen (sunny) and Oslo (rain)

`build_agent(model)` builds the same agent on any model (the end-to-end test uses the embedded
local model: `tests/test_planning_e2e.py`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from ferrule.agent import ModelRetry
from ferrule.agent import Tool
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import Model
from ferrule.planning import PlanBudget
from ferrule.planning import PlanningAgent
from ferrule.planning import StepSkippedEvent

CITIES = {
    "Shenzhen": {"condition": "sunny", "temperature": 27, "outdoor_suitable": True},
    "Oslo": {"condition": "rain", "temperature": 6, "outdoor_suitable": False},
}
CALLS: list[str] = []
"""Every tool call the example made, in order (the skipped branch never appears)."""
PRIMARY = {"up": False}
"""Whether the primary weather service answers (it is down in the example)."""


def weather_current(city: str) -> dict[str, Any]:
    """Get the current weather for a city from the primary weather service.

    Args:
        city: The city's name, e.g. "Shenzhen".
    """
    CALLS.append(f"weather_current({city})")
    if not PRIMARY["up"]:
        raise ModelRetry("the primary weather service is unavailable (HTTP 503)")
    return weather_report(city)


def weather_report(city: str) -> dict[str, Any]:
    """The weather both services report."""
    return {
        "city": city,
        **CITIES.get(city, {"condition": "cloudy", "temperature": 15, "outdoor_suitable": False}),
    }


def weather_backup(city: str) -> dict[str, Any]:
    """Get the current weather for a city from the backup weather service.

    Args:
        city: The city's name, e.g. "Shenzhen".
    """
    CALLS.append(f"weather_backup({city})")
    return weather_report(city)


def activity_outdoor(city: str, temperature: int) -> dict[str, Any]:
    """Suggest an outdoor evening activity for the temperature.

    Args:
        city: The city's name.
        temperature: The temperature in degrees Celsius.
    """
    CALLS.append(f"activity_outdoor({city}, {temperature})")
    place = "a walk along the bay" if temperature >= 20 else "a brisk walk in the park"
    return {"activity": place, "bring": "sunscreen" if temperature >= 25 else "a jacket"}


def activity_indoor(city: str) -> dict[str, Any]:
    """Suggest an indoor evening activity.

    Args:
        city: The city's name.
    """
    CALLS.append(f"activity_indoor({city})")
    return {"activity": "the city museum's late opening"}


def itinerary_compose(city: str) -> dict[str, Any]:
    """Reserve a dinner table to end the evening.

    Args:
        city: The city's name.
    """
    CALLS.append(f"itinerary_compose({city})")
    return {"dinner": f"a table for two at 20:00 in {city}"}


TOOLS = [
    Tool(weather_current, side_effect="read_only"),
    Tool(weather_backup, side_effect="read_only"),
    Tool(activity_outdoor, side_effect="read_only"),
    Tool(activity_indoor, side_effect="read_only"),
    Tool(itinerary_compose, side_effect="idempotent"),
]


def plan_for(city: str, weather_tool: str) -> list[dict[str, Any]]:
    """The steps of the seed's plan for `city`."""
    return [
        {"id": "weather", "capability": weather_tool, "input": {"city": city}},
        {
            "id": "outdoor",
            "capability": "activity_outdoor",
            "input": {"city": city},
            "depends_on": ["weather"],
            "condition": {"source_step": "weather", "source_path": "/outdoor_suitable", "equals": True},
            "bindings": [
                {"source_step": "weather", "source_path": "/temperature", "target_path": "/temperature"}
            ],
        },
        {
            "id": "indoor",
            "capability": "activity_indoor",
            "input": {"city": city},
            "depends_on": ["weather"],
            "condition": {"source_step": "weather", "source_path": "/outdoor_suitable", "equals": False},
        },
        {
            "id": "compose",
            "capability": "itinerary_compose",
            "input": {"city": city},
            "depends_on": ["outdoor", "indoor"],
        },
    ]


def _request_text(messages: Sequence[Message]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "".join(
        p.content for p in first.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    )


def scripted(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    """Stands in for a real model as planner, replanner and composer."""
    text = _request_text(messages)
    city = next((c for c in CITIES if c in text), "Shenzhen")
    tools = [t.name for t in info.output_tools]
    if tools == ["Plan"]:
        return ModelResponse(
            parts=[ToolCallPart("Plan", {"version": 1, "steps": plan_for(city, "weather_current")})]
        )
    if tools == ["Patch"]:
        patch = {"replace": ["weather"], "steps": plan_for(city, "weather_backup")[:1]}
        return ModelResponse(parts=[ToolCallPart("Patch", patch)])
    evidence = json.loads(text.split("Evidence (JSON):\n", 1)[1])
    done = {s["step"]: s.get("output") for s in evidence["steps"] if s["status"] == "succeeded"}
    weather = done["weather"]
    activity = done["outdoor"] if "outdoor" in done else done["indoor"]
    return ModelResponse(
        parts=[
            TextPart(
                f"{city}: {weather['condition']}, {weather['temperature']} °C. Tonight: {activity['activity']}, "
                f"then {done['compose']['dinner']}."
            )
        ]
    )


def build_agent(model: Model | str, *, budget: PlanBudget | None = None, **options: Any) -> PlanningAgent:
    """The weather planning agent on any model."""
    return PlanningAgent(
        model,
        tools=TOOLS,
        instructions="You plan an evening out. Use the weather to choose between outdoor and indoor activities.",
        budget=budget or PlanBudget(),
        **options,
    )


async def main() -> None:
    agent = build_agent(FunctionModel(scripted))
    for city in ("Shenzhen", "Oslo"):
        CALLS.clear()
        events: list[Any] = []

        async def on_event(event: Any, events: list[Any] = events) -> None:
            events.append(event)

        result = await agent.run(
            f"Plan tonight's activities in {city} based on the weather", event_handler=on_event
        )
        skipped = [f"{e.step_id} ({e.reason})" for e in events if isinstance(e, StepSkippedEvent)]
        stats = result.stats
        print(result.output)
        print(f"  calls: {', '.join(CALLS)}")
        print(f"  skipped: {', '.join(skipped)}")
        print(
            f"  revision={result.report.revision} replans={stats.replans} batches={stats.batches} "
            f"steps={stats.steps} tool_calls={stats.tool_calls} model_calls={stats.model_calls}"
        )


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
