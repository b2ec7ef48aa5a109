"""The tool catalog of a model-planned run: what steps may call, and the plan's JSON Schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any
from typing import Literal
from typing import cast

from ferrule.agent import Tool
from ferrule.core.errors import UserError
from ferrule.core.json_schema import SchemaValidator
from ferrule.core.json_schema import compile_validator

from ._document import AgentTask
from ._document import prompt_check
from ._errors import PlanError
from ._limits import MAX_AGENT_PROMPT_CHARS
from ._limits import MAX_BINDINGS
from ._limits import MAX_POINTER_CHARS
from ._limits import MAX_STEP_ID_CHARS
from ._limits import MAX_TITLE_CHARS

__all__ = ["Catalog"]

MAX_CATALOG_TOOLS = 128
"""Most tools one catalog may hold."""
MAX_AGENT_TOOL_CALLS = 32
"""The largest `max_tool_calls` an agentic step may ask for."""
MAX_PLAN_REFS = 256
"""Most dependencies one step of the plain schema may list (the plan's own size bounds them further)."""

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
        self._schemas: dict[tuple[int, str, bool], dict[str, Any]] = {}
        for name, tool in found.items():
            try:
                self._validators[name] = compile_validator(relaxed(tool.parameters_json_schema))
            except UserError as exc:
                raise UserError(f"the schema of tool {name!r} cannot be used in a plan: {exc}") from exc
        lines: list[str] = []
        for name, tool in found.items():
            description = (tool.description or "").strip().splitlines()
            summary = description[0] if description else "(no description)"
            params = ", ".join(tool.parameters_json_schema.get("properties", {})) or "none"
            lines.append(f"- {name} [{tool.side_effect}] (input: {params}): {summary}")
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

    def document_schema(
        self,
        *,
        max_steps: int,
        kind: Literal["plan", "patch"] = "plan",
        replaceable: Sequence[str] | None = None,
        succeeded: Sequence[str] = (),
        constrained: bool = False,
    ) -> dict[str, Any]:
        """The JSON Schema of a plan document (or patch) over this catalog; a fresh copy each call.

        Each step is one of the catalog's tools with that tool's input schema (minus `required`:
        bindings may fill those), or an agentic step. For a patch, `replaceable` (the failed and
        not yet started steps) restricts what `replace` may name.

        `constrained=True` is the variant for models whose output a grammar enforces (llama.cpp):
        step IDs are numbered (`s1`, `s2`, ...), every reference names an earlier step (of a patch:
        a step that `succeeded`), and inputs are complete, so a model under constrained decoding
        cannot write an unknown dependency, a cycle, a duplicate ID or an incomplete input at all.
        Every document it admits is also admitted by the plain schema.
        """
        if constrained and kind == "patch":
            return self._patch_schema(tuple(replaceable or ()), tuple(succeeded), max_steps, constrained=True)
        key = (max_steps, kind, constrained)
        cached = self._schemas.get(key)
        if cached is None:
            if kind == "plan":
                cached = self._plan_schema(max_steps, constrained=constrained)
            else:
                cached = self._patch_schema(None, (), max_steps, constrained=False)
            self._schemas[key] = cached
        schema = cast("dict[str, Any]", json.loads(json.dumps(cached)))
        if kind == "patch" and replaceable is not None:
            schema["properties"]["replace"]["items"] = {"enum": list(replaceable)}
        return schema

    def _base_defs(self, *, complete: bool) -> dict[str, Any]:
        """Definitions every variant shares: each tool's input schema (and the agent task)."""
        defs: dict[str, Any] = {}
        for index, (name, tool) in enumerate(self.tools.items()):
            schema = tool.parameters_json_schema if complete else relaxed(tool.parameters_json_schema)
            defs[f"input_{index}"] = _hoist(schema, f"t{index}_", defs, name)
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
        return defs

    def _branches(
        self, defs: dict[str, Any], *, step_id: dict[str, Any], refs: Sequence[str] | None, suffix: str
    ) -> list[dict[str, Any]]:
        """The alternatives for one step: a call of each tool, or an agentic step.

        `refs=None` lets references name any step; a sequence allows only those (none: the step
        has no dependencies, condition or bindings).
        """
        pointer = {"type": "string", "maxLength": MAX_POINTER_CHARS}
        ref: dict[str, Any] = (
            {"type": "string", "minLength": 1, "maxLength": MAX_STEP_ID_CHARS}
            if refs is None
            else {"enum": list(refs)}
        )
        common: dict[str, Any] = {}
        if refs is None or refs:
            defs[f"condition{suffix}"] = {
                "type": "object",
                "description": "Run the step only if source_path in source_step's output equals `equals`.",
                "properties": {"source_step": ref, "source_path": pointer, "equals": {}},
                "required": ["source_step", "source_path", "equals"],
                "additionalProperties": False,
            }
            defs[f"binding{suffix}"] = {
                "type": "object",
                "description": "Copy source_path of source_step's output to target_path of this step's input.",
                "properties": {"source_step": ref, "source_path": pointer, "target_path": pointer},
                "required": ["source_step", "source_path", "target_path"],
                "additionalProperties": False,
            }
            common = {
                "depends_on": {
                    "type": "array",
                    "items": ref,
                    "maxItems": len(refs) if refs else MAX_PLAN_REFS,
                },
                "condition": {"$ref": f"#/$defs/condition{suffix}"},
                "bindings": {
                    "type": "array",
                    "items": {"$ref": f"#/$defs/binding{suffix}"},
                    "maxItems": MAX_BINDINGS,
                },
            }
        common["required"] = {"type": "boolean"}
        if refs is None:
            common["title"] = {"type": "string", "maxLength": MAX_TITLE_CHARS}
        branches: list[dict[str, Any]] = []
        for index, name in enumerate(self.tools):
            branches.append(
                {
                    "type": "object",
                    "properties": {
                        "id": step_id,
                        "capability": {"const": name},
                        "input": {"$ref": f"#/$defs/input_{index}"},
                        **common,
                    },
                    "required": ["id", "capability"] if refs is None else ["id", "capability", "input"],
                    "additionalProperties": False,
                }
            )
        if self.agentic_steps:
            branches.append(
                {
                    "type": "object",
                    "properties": {
                        "id": step_id,
                        "agent": {"$ref": "#/$defs/agent_task"},
                        "input": {"type": "object"},
                        **common,
                    },
                    "required": ["id", "agent"],
                    "additionalProperties": False,
                }
            )
        return branches

    @staticmethod
    def _one_of(branches: list[dict[str, Any]]) -> dict[str, Any]:
        return branches[0] if len(branches) == 1 else {"anyOf": branches}

    @staticmethod
    def _document(properties: dict[str, Any], required: list[str], defs: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
            "$defs": defs,
        }

    def _plan_schema(self, max_steps: int, *, constrained: bool) -> dict[str, Any]:
        defs = self._base_defs(complete=constrained)
        if not constrained:
            step = self._one_of(
                self._branches(
                    defs,
                    step_id={"type": "string", "minLength": 1, "maxLength": MAX_STEP_ID_CHARS},
                    refs=None,
                    suffix="",
                )
            )
            steps: dict[str, Any] = {"type": "array", "items": step, "minItems": 1, "maxItems": max_steps}
        else:
            ids = [f"s{k + 1}" for k in range(max_steps)]
            for k, step_id in enumerate(ids):
                branches = self._branches(
                    defs, step_id={"const": step_id}, refs=ids[:k], suffix=f"_{step_id}"
                )
                defs[f"step_{step_id}"] = self._one_of(branches)
            # One alternative per plan length: step k may only reference steps 1 ... k-1.
            steps = {
                "anyOf": [
                    {
                        "type": "array",
                        "prefixItems": [{"$ref": f"#/$defs/step_{i}"} for i in ids[:n]],
                        "minItems": n,
                        "maxItems": n,
                    }
                    for n in range(1, max_steps + 1)
                ]
            }
        return self._document({"version": {"const": 1}, "steps": steps}, ["version", "steps"], defs)

    def _patch_schema(
        self,
        replaceable: tuple[str, ...] | None,
        succeeded: tuple[str, ...],
        max_steps: int,
        *,
        constrained: bool,
    ) -> dict[str, Any]:
        defs = self._base_defs(complete=constrained)
        if constrained:
            assert replaceable is not None
            # Replacements take the IDs of the steps they replace and build on succeeded work only.
            branches = self._branches(
                defs, step_id={"enum": list(replaceable)}, refs=succeeded, suffix="_patch"
            )
            limit = len(replaceable)
            replace: dict[str, Any] = {
                "type": "array",
                "items": {"enum": list(replaceable)},
                "minItems": 1,
                "maxItems": limit,
            }
        else:
            string_id = {"type": "string", "minLength": 1, "maxLength": MAX_STEP_ID_CHARS}
            branches = self._branches(defs, step_id=string_id, refs=None, suffix="")
            limit = max_steps
            replace = {"type": "array", "items": string_id, "minItems": 1, "maxItems": max_steps}
        steps = {"type": "array", "items": self._one_of(branches), "maxItems": limit}
        return self._document(
            {"replace": replace, "steps": steps, "version": {"const": 1}}, ["replace", "steps"], defs
        )

    def describe(self) -> str:
        """One line per tool (name, side effect, parameter names, summary) for planner prompts."""
        return self._description
