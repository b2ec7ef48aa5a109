"""Get the household ready for the weekend: parallel steps, conditional bindings, a replan.

The plan checks the fridge and the forecast in parallel, then orders what is missing (the
fridge's `missing` list is bound into the order), plans the laundry from the forecast (`rain` is
bound in, and the step runs only when it rains), skips the garden when it rains, and posts a
summary for the family. The grocery store's API is down on the first call, so the required
`groceries` step fails; one replan retries it and keeps everything that already succeeded.

    python docs/examples/plan_household.py            # offline: a scripted FunctionModel plans
    python docs/examples/plan_household.py --local    # the embedded local model plans (llama.cpp)

Its plan, drawn with `render_mermaid`, is docs/images/plan_household.svg (see docs/planning.md).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import anyio

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
from ferrule.core.settings import ModelSettings
from ferrule.planning import PlanBudget
from ferrule.planning import PlanDocument
from ferrule.planning import PlanningAgent
from ferrule.planning import validate_plan

CALLS: list[str] = []
"""Every tool call, in the order they were made."""
STORE = {"attempts": 0}


def fridge_inventory() -> dict[str, Any]:
    """List what is in the fridge and what is missing for the weekend."""
    CALLS.append("fridge_inventory")
    return {"have": ["butter", "rice"], "missing": ["milk", "eggs"]}


def weather_forecast(city: str) -> dict[str, Any]:
    """Get the weekend forecast for a city.

    Args:
        city: The city's name.
    """
    CALLS.append(f"weather_forecast({city})")
    return {"city": city, "rain": True, "high": 14}


def order_groceries(items: list[str]) -> dict[str, Any]:
    """Order groceries for delivery.

    Args:
        items: What to order.
    """
    STORE["attempts"] += 1
    CALLS.append(f"order_groceries({', '.join(items)})")
    if STORE["attempts"] == 1:
        raise RuntimeError("the grocery store's API is temporarily unavailable (HTTP 503)")
    return {"order": "A-1001", "items": items, "delivery": "Saturday 10:00"}


def laundry_plan(rain: bool) -> dict[str, Any]:
    """Plan the laundry around the weather.

    Args:
        rain: Whether it will rain.
    """
    CALLS.append(f"laundry_plan(rain={rain})")
    return {"dry": "in the dryer" if rain else "on the line"}


def garden_chores(city: str) -> dict[str, Any]:
    """Plan garden chores for a dry weekend.

    Args:
        city: The city's name.
    """
    CALLS.append(f"garden_chores({city})")
    return {"chores": ["mow the lawn", "water the beds"]}


def family_board(note: str, order: str = "") -> dict[str, Any]:
    """Post the weekend plan on the family's message board.

    Args:
        note: The message to post.
        order: The grocery order number, if any.
    """
    CALLS.append(f"family_board({order})")
    return {"posted": True}


TOOLS = [
    Tool(fridge_inventory, side_effect="read_only"),
    Tool(weather_forecast, side_effect="read_only"),
    Tool(order_groceries, side_effect="non_idempotent"),
    Tool(laundry_plan, side_effect="read_only"),
    Tool(garden_chores, side_effect="read_only"),
    Tool(family_board, side_effect="idempotent"),
]

PLAN: dict[str, Any] = {
    "version": 1,
    "steps": [
        {"id": "fridge", "capability": "fridge_inventory"},
        {"id": "forecast", "capability": "weather_forecast", "input": {"city": "Utrecht"}},
        {
            "id": "groceries",
            "capability": "order_groceries",
            "depends_on": ["fridge"],
            "bindings": [{"source_step": "fridge", "source_path": "/missing", "target_path": "/items"}],
        },
        {
            "id": "laundry",
            "capability": "laundry_plan",
            "depends_on": ["forecast"],
            "condition": {"source_step": "forecast", "source_path": "/rain", "equals": True},
            "bindings": [{"source_step": "forecast", "source_path": "/rain", "target_path": "/rain"}],
        },
        {
            "id": "garden",
            "capability": "garden_chores",
            "input": {"city": "Utrecht"},
            "depends_on": ["forecast"],
            "condition": {"source_step": "forecast", "source_path": "/rain", "equals": False},
            "required": False,
        },
        {
            "id": "board",
            "capability": "family_board",
            "input": {"note": "Weekend plan is ready"},
            "depends_on": ["groceries", "laundry", "garden"],
            "bindings": [{"source_step": "groceries", "source_path": "/order", "target_path": "/order"}],
        },
    ],
}
"""The plan the scripted planner writes (and the one docs/images/plan_household.svg draws)."""

REQUEST = (
    "Get our household in Utrecht ready for the weekend: groceries, laundry, garden, and tell the family."
)


def reference_plan() -> PlanDocument:
    """`PLAN`, validated against the catalog."""
    return validate_plan(PLAN, PlanningAgent(FunctionModel(scripted), tools=TOOLS).catalog)


def scripted(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    """Stands in for a real model as planner, replanner and composer."""
    tools = [t.name for t in info.output_tools]
    if tools == ["Plan"]:
        return ModelResponse(parts=[ToolCallPart("Plan", PLAN)])
    if tools == ["Patch"]:
        retry = next(s for s in PLAN["steps"] if s["id"] == "groceries")
        return ModelResponse(parts=[ToolCallPart("Patch", {"replace": ["groceries"], "steps": [retry]})])
    first = messages[0]
    assert isinstance(first, ModelRequest)
    text = "".join(
        p.content for p in first.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    )
    done = {s["step"]: s.get("output") for s in json.loads(text.split("Evidence (JSON):\n", 1)[1])["steps"]}
    order, laundry = done["groceries"], done["laundry"]
    return ModelResponse(
        parts=[
            TextPart(
                f"Ordered {' and '.join(order['items'])} (order {order['order']}, {order['delivery']}); "
                f"it will rain, so the laundry goes {laundry['dry']} and the garden waits. The family board is updated."
            )
        ]
    )


def build_agent(model: Model | str, **options: Any) -> PlanningAgent:
    """The household planning agent on any model."""
    return PlanningAgent(
        model,
        tools=TOOLS,
        instructions="You organise a family's weekend with the household tools.",
        budget=PlanBudget(max_model_calls=6, max_batches=6),
        **options,
    )


async def run(agent: PlanningAgent) -> None:
    CALLS.clear()
    STORE["attempts"] = 0
    result = await agent.run(REQUEST)
    stats = result.stats
    print(result.output)
    print(f"  calls: {'; '.join(CALLS)}")
    print(f"  actions: {', '.join(f'{a.tool_name}={a.status}' for a in result.actions)}")
    print(f"  skipped: {', '.join(w.step_id or '' for w in result.warnings if w.kind == 'step_skipped')}")
    print(
        f"  revision={result.report.revision} replans={stats.replans} batches={stats.batches} "
        f"steps={stats.steps} tool_calls={stats.tool_calls} model_calls={stats.model_calls}"
    )


async def main(local: bool) -> None:
    if not local:
        await run(build_agent(FunctionModel(scripted)))
        return
    from ferrule.providers.llamacpp import LlamaCppServer

    async with LlamaCppServer.start(model="qwen2.5-coder-0.5b") as server:
        await run(build_agent(server.model(), model_settings=ModelSettings(temperature=0, max_tokens=800)))


if __name__ == "__main__":
    anyio.run(main, "--local" in sys.argv[1:])
