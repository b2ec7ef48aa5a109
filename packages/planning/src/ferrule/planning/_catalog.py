"""The tool catalog of a model-planned run: what steps may call, and the plan's JSON Schema."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, cast

from ferrule.agent import Tool
from ferrule.core.errors import UserError
from ferrule.core.json_schema import SchemaValidator, compile_validator

from ._document import AgentTask, prompt_check
from ._errors import PlanError
from ._limits import (
    MAX_AGENT_PROMPT_CHARS,
    MAX_BINDINGS,
    MAX_POINTER_CHARS,
    MAX_STEP_ID_CHARS,
    MAX_TITLE_CHARS,
)

__all__ = ["Catalog"]

MAX_CATALOG_TOOLS = 128
"""Most tools one catalog may hold."""
MAX_AGENT_TOOL_CALLS = 32
"""The largest `max_tool_calls` an agentic step may ask for."""

_DEFS = "#/$defs/"


def _hoist(schema: dict[str, Any], prefix: str, defs: dict[str, Any], tool: str) -> dict[str, Any]:
    """`schema` with its `$defs` moved into `defs` under `prefix`, and its references rewritten."""

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            for key, value in cast("dict[str, Any]", node).items():
                if key == "$ref":
                    if not isinstance(value, str) or not value.startswith(_DEFS):
                        raise UserError(
                            f"the schema of tool {tool!r} uses the reference {value!r}; a plan schema can only "
                            "embed references to the tool schema's own '#/$defs/...'"
                        )
                    out[key] = _DEFS + prefix + value[len(_DEFS) :]
                else:
                    out[key] = rewrite(value)
            return out
        if isinstance(node, list):
            return [rewrite(v) for v in cast("list[Any]", node)]
        return node

    body = dict(schema)
    local = body.pop("$defs", None)
    if isinstance(local, dict):
        for name, definition in cast("dict[str, Any]", local).items():
            defs[prefix + name] = rewrite(definition)
    return cast("dict[str, Any]", rewrite(body))


def relaxed(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameter schema without its top-level `required`: bindings may fill those later."""
    body = dict(schema)
    body.pop("required", None)
    return body


class Catalog:
    """The tools plan steps may call, by name; built once per `PlanningAgent`."""

    __slots__ = ("_description", "_schemas", "_validators", "agentic_steps", "tools")

    def __init__(
        self, tools: Sequence[Tool[Any] | Callable[..., Any]], *, agentic_steps: bool = False
    ) -> None:
        found: dict[str, Tool[Any]] = {}
        for item in tools:
            tool = cast("Tool[Any]", item) if isinstance(item, Tool) else Tool(item)
            if tool.name in found:
                raise UserError(f"two catalog tools are named {tool.name!r}; tool names must be unique")
            if tool.kind != "function":
                raise UserError(
                    f"tool {tool.name!r} is external; a plan step can only call tools that run here"
                )
            found[tool.name] = tool
        if not found:
            raise UserError("a planning agent needs at least one tool in its catalog")
        if len(found) > MAX_CATALOG_TOOLS:
            raise UserError(f"a catalog holds at most {MAX_CATALOG_TOOLS} tools, got {len(found)}")
        self.tools: Mapping[str, Tool[Any]] = MappingProxyType(found)
        """The tools by name."""
        self.agentic_steps = agentic_steps
        """Whether plans may contain agentic steps."""
        self._validators: dict[str, SchemaValidator] = {}
        self._schemas: dict[tuple[int, str], dict[str, Any]] = {}
        for name, tool in found.items():
            try:
                self._validators[name] = compile_validator(relaxed(tool.parameters_json_schema))
            except UserError as exc:
                raise UserError(f"the schema of tool {name!r} cannot be used in a plan: {exc}") from exc
        lines: list[str] = []
        for name, tool in found.items():
            params = json.dumps(tool.parameters_json_schema, separators=(",", ":"))
            description = (tool.description or "").strip().splitlines()
            summary = description[0] if description else "(no description)"
            lines.append(f"- {name} [{tool.side_effect}]: {summary} Input schema: {params}")
        self._description = "\n".join(lines)
        # A tool schema that cannot be embedded, or a plan schema outside the local dialect, fails here.
        compile_validator(self.document_schema(max_steps=1))

    def names_text(self) -> str:
        """The tool names, for messages."""
        return ", ".join(self.tools)

    def input_validator(self, name: str) -> SchemaValidator:
        """The validator of a step's input before bindings (the tool's schema minus `required`)."""
        return self._validators[name]

    def check_agent_task(self, task: AgentTask, step_id: str) -> None:
        """Validate an agentic step's allowlist, budget and prompt."""
        if not self.agentic_steps:
            raise PlanError(
                "agentic steps are not enabled for this planner (PlanningAgent(agentic_steps=True))",
                step_id=step_id,
            )
        prompt_check(task.prompt, step_id)
        if not task.tools:
            raise PlanError("an agentic step needs an explicit, non-empty tool allowlist", step_id=step_id)
        if len(set(task.tools)) != len(task.tools):
            raise PlanError("the agentic step's allowlist names a tool twice", step_id=step_id)
        for name in task.tools:
            if name not in self.tools:
                raise PlanError(
                    f"the agentic step's allowlist names {name!r}, which is not in the tool catalog "
                    f"({self.names_text()})",
                    step_id=step_id,
                )
        if not 1 <= task.max_tool_calls <= MAX_AGENT_TOOL_CALLS:
            raise PlanError(
                f"an agentic step's max_tool_calls must be from 1 to {MAX_AGENT_TOOL_CALLS}, got {task.max_tool_calls}",
                step_id=step_id,
            )

    def document_schema(self, *, max_steps: int, kind: Literal["plan", "patch"] = "plan") -> dict[str, Any]:
        """The JSON Schema of a plan document (or patch) over this catalog; a fresh copy each call."""
        key = (max_steps, kind)
        cached = self._schemas.get(key)
        if cached is None:
            cached = self._schemas[key] = self._build_schema(max_steps, kind)
        return cast("dict[str, Any]", json.loads(json.dumps(cached)))

    def _build_schema(self, max_steps: int, kind: str) -> dict[str, Any]:
        string_id = {"type": "string", "minLength": 1, "maxLength": MAX_STEP_ID_CHARS}
        pointer = {"type": "string", "maxLength": MAX_POINTER_CHARS}
        defs: dict[str, Any] = {
            "condition": {
                "type": "object",
                "description": "Run the step only if source_path in source_step's output equals `equals`.",
                "properties": {"source_step": string_id, "source_path": pointer, "equals": {}},
                "required": ["source_step", "source_path", "equals"],
                "additionalProperties": False,
            },
            "binding": {
                "type": "object",
                "description": "Copy source_path of source_step's output to target_path of this step's input.",
                "properties": {"source_step": string_id, "source_path": pointer, "target_path": pointer},
                "required": ["source_step", "source_path", "target_path"],
                "additionalProperties": False,
            },
        }
        common: dict[str, Any] = {
            "depends_on": {"type": "array", "items": string_id, "maxItems": max_steps},
            "condition": {"$ref": "#/$defs/condition"},
            "bindings": {"type": "array", "items": {"$ref": "#/$defs/binding"}, "maxItems": MAX_BINDINGS},
            "required": {"type": "boolean"},
            "title": {"type": "string", "maxLength": MAX_TITLE_CHARS},
        }
        branches: list[dict[str, Any]] = []
        for index, (name, tool) in enumerate(self.tools.items()):
            params = _hoist(relaxed(tool.parameters_json_schema), f"t{index}_", defs, name)
            branches.append(
                {
                    "type": "object",
                    "properties": {"id": string_id, "capability": {"const": name}, "input": params, **common},
                    "required": ["id", "capability"],
                    "additionalProperties": False,
                }
            )
        if self.agentic_steps:
            defs["agent_task"] = {
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "minLength": 1, "maxLength": MAX_AGENT_PROMPT_CHARS},
                    "tools": {
                        "type": "array",
                        "items": {"enum": list(self.tools)},
                        "minItems": 1,
                        "maxItems": len(self.tools),
                    },
                    "max_tool_calls": {"type": "integer", "minimum": 1, "maximum": MAX_AGENT_TOOL_CALLS},
                },
                "required": ["prompt", "tools", "max_tool_calls"],
                "additionalProperties": False,
            }
            branches.append(
                {
                    "type": "object",
                    "properties": {
                        "id": string_id,
                        "agent": {"$ref": "#/$defs/agent_task"},
                        "input": {"type": "object"},
                        **common,
                    },
                    "required": ["id", "agent"],
                    "additionalProperties": False,
                }
            )
        step = branches[0] if len(branches) == 1 else {"anyOf": branches}
        steps: dict[str, Any] = {"type": "array", "items": step, "maxItems": max_steps}
        if kind == "plan":
            steps["minItems"] = 1
            properties: dict[str, Any] = {"version": {"const": 1}, "steps": steps}
            required = ["version", "steps"]
        else:
            properties = {
                "replace": {"type": "array", "items": string_id, "minItems": 1, "maxItems": max_steps},
                "steps": steps,
                "version": {"const": 1},
            }
            required = ["replace", "steps"]
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
            "$defs": defs,
        }

    def describe(self) -> str:
        """One line per tool (name, side effect, description, input schema) for planner prompts."""
        return self._description
