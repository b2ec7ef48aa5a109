"""Shared helpers of the ferrule-planning tests: a scripted planner/composer model and recording tools."""

from __future__ import annotations

import json
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ferrule.agent import Tool
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.profile import ModelProfile

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "docs" / "examples"

Answer = dict[str, Any] | str | Callable[["Script", Sequence[Message], AgentInfo], ModelResponse]


class Script:
    """A FunctionModel script: planner answers by output tool name, composer answers as text.

    `plans`, `patches` and `routes` are consumed in order (each a JSON dict, raw JSON text, or a
    function returning a whole response); the composer answers `answer` (a string, or a function
    of the evidence JSON). Every request is recorded in `calls` as `(role, messages, info)`.
    """

    def __init__(
        self,
        plans: Sequence[Answer] = (),
        *,
        patches: Sequence[Answer] = (),
        routes: Sequence[str] = (),
        answer: str | Callable[[dict[str, Any]], str] = "done",
    ) -> None:
        self.plans = list(plans)
        self.patches = list(patches)
        self.routes = list(routes)
        self.answer = answer
        self.calls: list[tuple[str, list[Message], AgentInfo]] = []

    def roles(self) -> list[str]:
        """The role of every request made so far."""
        return [role for role, _, _ in self.calls]

    def _structured(
        self, name: str, queue: list[Answer], messages: Sequence[Message], info: AgentInfo
    ) -> ModelResponse:
        item = queue.pop(0)
        if callable(item):
            return item(self, messages, info)
        if info.output_tools:
            return ModelResponse(parts=[ToolCallPart(name, item)])
        return ModelResponse(parts=[TextPart(item if isinstance(item, str) else json.dumps(item))])

    def __call__(self, messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        names = [t.name for t in info.output_tools]
        instructions = info.instructions or ""
        role = (
            names[0]
            if names
            else "Plan"
            if "submit ONE plan" in instructions
            else "Patch"
            if "submit ONE patch" in instructions.replace("Submit", "submit")
            else "Route"
            if "Decide how the request" in instructions
            else "compose"
            if "Write the final answer" in instructions
            else "chat"
        )
        self.calls.append((role, list(messages), info))
        if role == "Plan":
            return self._structured("Plan", self.plans, messages, info)
        if role == "Patch":
            return self._structured("Patch", self.patches, messages, info)
        if role == "Route":
            return self._structured("Route", [{"mode": self.routes.pop(0)}], messages, info)
        if role == "compose":
            if callable(self.answer):
                return ModelResponse(parts=[TextPart(self.answer(evidence_of(messages)))])
            return ModelResponse(parts=[TextPart(self.answer)])
        return ModelResponse(parts=[TextPart(self.answer if isinstance(self.answer, str) else "chat")])

    def model(self, profile: ModelProfile | None = None) -> FunctionModel:
        """A FunctionModel running this script."""
        return FunctionModel(self, profile=profile)


def prompt_of(messages: Sequence[Message]) -> str:
    """The text of the first user prompt of a request."""
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "".join(
        p.content for p in first.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    )


def evidence_of(messages: Sequence[Message]) -> dict[str, Any]:
    """The evidence JSON the composer was given."""
    return json.loads(prompt_of(messages).split("Evidence (JSON):\n", 1)[1])


def retry_prompts(messages: Sequence[Message]) -> list[str]:
    """The retry prompts in a request's history."""
    return [
        p.model_response()
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, RetryPromptPart)
    ]


class Recorder:
    """Builds tools that record each call (name and arguments) in `calls`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def tool(
        self,
        name: str,
        result: Any = None,
        *,
        params: dict[str, Any] | None = None,
        side_effect: str = "read_only",
        fail: BaseException | None = None,
        **options: Any,
    ) -> Tool[Any]:
        """A tool taking `params` (a JSON Schema of properties, all required) and returning `result`.

        `result` may be a function of the arguments; `fail` is raised instead of returning.
        """
        properties = params if params is not None else {"city": {"type": "string"}}

        def function(args: dict[str, Any]) -> Any:
            self.calls.append((name, dict(args)))
            if fail is not None:
                raise fail
            return result(args) if callable(result) else result

        return Tool.from_schema(
            function,
            name=name,
            description=f"The {name} tool.",
            parameters_json_schema={
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
            takes_ctx=False,
            side_effect=side_effect,
            **options,
        )


def step(step_id: str, capability: str = "lookup", **fields: Any) -> dict[str, Any]:
    """A plan-document step as JSON."""
    return {
        "id": step_id,
        "capability": capability,
        "input": fields.pop("input", {"city": "Paris"}),
        **fields,
    }


def plan(*steps: dict[str, Any]) -> dict[str, Any]:
    """A plan document as JSON."""
    return {"version": 1, "steps": list(steps)}


def reads_off_dependencies(**reads: Any) -> dict[str, Any]:
    """A plan whose step `b` depends only on `a` while its `reads` (a condition or bindings) read step `x`."""
    return plan(step("a"), step("x"), step("b", depends_on=["a"], **reads))


def pay_plan() -> dict[str, Any]:
    """A quote, a payment bound to the quote's amount, then a receipt lookup that depends on it."""
    return plan(
        step("quote", "lookup"),
        step(
            "pay",
            "pay",
            input={"to": "alice"},
            depends_on=["quote"],
            bindings=[{"source_step": "quote", "source_path": "/amount", "target_path": "/amount"}],
        ),
        step("receipt", "lookup", depends_on=["pay"]),
    )


def pay_tools(tools: Recorder, *, requires_approval: bool = True, **options: Any) -> list[Tool[Any]]:
    """`lookup` (read-only, returns an amount of 250) and `pay` (non-idempotent; `options` go to its `Tool`)."""
    return [
        tools.tool("lookup", {"amount": 250}),
        tools.tool(
            "pay",
            "paid",
            params={"to": {"type": "string"}, "amount": {"type": "integer"}},
            side_effect="non_idempotent",
            requires_approval=requires_approval,
            **options,
        ),
    ]
