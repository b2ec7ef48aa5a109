"""The planner (M-08): one synthetic output tool with forced choice, prompted JSON without tools,
domain tools only as catalog text, every answer validated before anything executes."""

from __future__ import annotations

import json
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import pytest

from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import full_profile
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.profile import ModelProfile
from ferrule.planning import PATCH_TOOL
from ferrule.planning import PLAN_TOOL
from ferrule.planning import PlanBudget
from ferrule.planning import PlanError
from ferrule.planning import PlanningAgent

from .conftest import Recorder
from .conftest import Script
from .conftest import plan
from .conftest import reads_off_dependencies
from .conftest import retry_prompts
from .conftest import step

pytestmark = pytest.mark.anyio

NO_TOOLS = ModelProfile(supports_tools=False, supports_json_object_output=True)
TOOLS_NO_CHOICE = ModelProfile(supports_tools=True)
JSON_SCHEMA_ONLY = ModelProfile(supports_json_schema_output=True)
EMULATED = ModelProfile(
    supports_tools=False,
    tools_emulated_via_output=True,
    supports_tool_choice=True,
    supports_json_schema_output=True,
)

NUMBERED = plan(step("s1"), step("s2", "report", depends_on=["s1"]))
CYCLIC = plan(step("a", depends_on=["b"]), step("b", depends_on=["a"]))
GOOD = plan(step("a"), step("b", "report", depends_on=["a"], input={"city": "Paris"}))


def agent_with(
    script: Script, tools: Recorder, profile: ModelProfile | None = None, **options: object
) -> PlanningAgent:
    return PlanningAgent(
        script.model(profile),
        tools=[tools.tool("lookup", {"temp": 20}), tools.tool("report", "ok", side_effect="idempotent")],
        **options,  # type: ignore[arg-type]
    )


async def test_the_planning_request_binds_only_the_plan_tool_with_forced_choice() -> None:
    script, tools = Script([GOOD]), Recorder()
    result = await agent_with(script, tools).run("weather report for Paris")
    role, messages, info = script.calls[0]
    assert role == PLAN_TOOL
    assert [t.name for t in info.output_tools] == [PLAN_TOOL]
    assert list(info.function_tools) == []
    assert info.allow_text_output is False
    assert info.model_settings.tool_choice == [PLAN_TOOL]
    # Domain tools are catalog text only (their schemas are in the Plan tool's), never offered.
    assert info.instructions is not None
    assert "- lookup [read_only] (input: city): The lookup tool." in info.instructions
    assert "- report [idempotent] (input: city): The report tool." in info.instructions
    assert info.output_tools[0].parameters_json_schema["properties"]["steps"]["maxItems"] == 12
    assert tools.names() == ["lookup", "report"]
    assert result.mode == "complex"
    assert script.roles() == [PLAN_TOOL, "compose"]
    del messages


@pytest.mark.parametrize(("profile", "choice"), [(full_profile(), [PLAN_TOOL]), (TOOLS_NO_CHOICE, None)])
async def test_tool_choice_is_forced_where_the_profile_honours_it(
    profile: ModelProfile, choice: object
) -> None:
    script = Script([GOOD])
    await agent_with(script, Recorder(), profile).run("go")
    info = script.calls[0][2]
    assert [t.name for t in info.output_tools] == [PLAN_TOOL]
    assert info.model_settings.tool_choice == choice


async def test_models_without_tools_plan_through_prompted_json() -> None:
    script, tools = Script([GOOD]), Recorder()
    result = await agent_with(script, tools, NO_TOOLS).run("go")
    info = script.calls[0][2]
    assert list(info.output_tools) == []
    assert list(info.function_tools) == []
    assert info.instructions is not None
    assert "Always respond with a JSON object that's compatible with this schema" in info.instructions
    assert '"capability":{"const":"lookup"}' in info.instructions
    assert tools.names() == ["lookup", "report"]
    assert result.report.plan is not None


async def test_repaired_json_must_still_validate() -> None:
    # Fenced JSON with prose around it is extracted, but a cyclic plan is still refused; the
    # model is told why, and its corrected answer is what executes.
    def fenced(doc: dict[str, Any]) -> Callable[[Script, Sequence[Message], AgentInfo], ModelResponse]:
        def answer(script: Script, messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
            return ModelResponse(
                parts=[TextPart(f"Here is the plan:\n```json\n{json.dumps(doc)}\n```\nDone.")]
            )

        return answer

    script, tools = Script([fenced(CYCLIC), fenced(GOOD)]), Recorder()
    result = await agent_with(script, tools, NO_TOOLS).run("go")
    assert script.roles() == [PLAN_TOOL, PLAN_TOOL, "compose"]
    feedback = retry_prompts(script.calls[1][1])
    assert len(feedback) == 1
    assert "plan step 'a': the dependencies form a cycle" in feedback[0]
    assert tools.names() == ["lookup", "report"]
    assert result.report.stats.model_calls == 3


@pytest.mark.parametrize(
    ("bad", "match", "step_id"),
    [
        (CYCLIC, "cycle", "a"),
        (
            reads_off_dependencies(condition={"source_step": "x", "source_path": "/ok", "equals": True}),
            "not one of its dependencies",
            "b",
        ),
        (
            reads_off_dependencies(bindings=[{"source_step": "x", "source_path": "/t", "target_path": "/t"}]),
            "binding reads step 'x'",
            "b",
        ),
        (plan(step("a", "shell")), "not in the step's tool catalog", "a"),
        (plan(*[step(f"s{i}") for i in range(4)]), "max_steps=3", "s3"),
        ({"version": 1, "steps": [{"id": 1}]}, "malformed", "#0"),
    ],
)
async def test_an_invalid_plan_fails_with_a_plan_error_before_any_tool_runs(
    bad: dict[str, object], match: str, step_id: str
) -> None:
    script, tools = Script([bad, bad]), Recorder()
    agent = agent_with(script, tools, budget=PlanBudget(max_steps=3))
    with pytest.raises(PlanError, match=match) as raised:
        await agent.run("go")
    assert raised.value.step_id == step_id
    assert tools.calls == []
    assert script.roles() == [PLAN_TOOL, PLAN_TOOL]  # one retry (plan_retries=1), no composer


async def test_plan_retries_zero_fails_at_the_first_invalid_plan() -> None:
    script, tools = Script([CYCLIC]), Recorder()
    with pytest.raises(PlanError, match="cycle"):
        await agent_with(script, tools, plan_retries=0).run("go")
    assert script.roles() == [PLAN_TOOL]
    assert tools.calls == []


async def test_text_instead_of_the_plan_tool_is_sent_back() -> None:
    def chatty(script: Script, messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("Sure! I would first look up the weather.")])

    script, tools = Script([chatty, GOOD]), Recorder()
    await agent_with(script, tools).run("go")
    assert "Plain text responses are not permitted" in retry_prompts(script.calls[1][1])[0]
    assert tools.names() == ["lookup", "report"]


async def test_the_replanning_request_binds_only_the_patch_tool() -> None:
    tools = Recorder()
    failing = tools.tool("flaky", fail=RuntimeError("service down"))
    script = Script(
        [plan(step("a", "flaky"), step("b", "lookup", depends_on=["a"]))],
        patches=[{"replace": ["a"], "steps": [step("a", "lookup")]}],
    )
    agent = PlanningAgent(script.model(), tools=[failing, tools.tool("lookup", {"t": 1})])
    await agent.run("go")
    role, messages, info = script.calls[1]
    assert role == PATCH_TOOL
    assert [t.name for t in info.output_tools] == [PATCH_TOOL]
    assert list(info.function_tools) == []
    assert info.model_settings.tool_choice == [PATCH_TOOL]
    request = messages[0]
    text = str(request)
    assert "- a: failed: RuntimeError: service down" in text
    assert "- b: not started" in text
    assert tools.names() == ["flaky", "lookup", "lookup"]


async def test_patch_tool_call_with_several_output_calls_uses_the_first_valid() -> None:
    # A response that calls Plan twice: the first valid call wins, like any output tool.
    def twice(script: Script, messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(PLAN_TOOL, GOOD), ToolCallPart(PLAN_TOOL, CYCLIC)])

    script, tools = Script([twice]), Recorder()
    await agent_with(script, tools).run("go")
    assert tools.names() == ["lookup", "report"]


async def test_models_with_json_schema_output_but_no_native_tools_plan_through_it() -> None:
    script, tools = Script([GOOD]), Recorder()
    await agent_with(script, tools, JSON_SCHEMA_ONLY).run("go")
    info = script.calls[0][2]
    assert list(info.output_tools) == []
    assert isinstance(info.output, JsonSchemaFormat)
    assert info.output.name == PLAN_TOOL
    assert (
        info.output.schema["properties"]["steps"]["items"]["anyOf"][0]["properties"]["id"]["type"] == "string"
    )
    assert tools.names() == ["lookup", "report"]


async def test_grammar_constrained_models_plan_with_the_numbered_schema() -> None:
    # The llama.cpp profile: tools only emulated, JSON-schema output enforced by a grammar.
    script, tools = Script([NUMBERED]), Recorder()
    result = await agent_with(script, tools, EMULATED).run("go")
    info = script.calls[0][2]
    assert list(info.output_tools) == []
    assert isinstance(info.output, JsonSchemaFormat)
    schema = info.output.schema
    lengths = schema["properties"]["steps"]["anyOf"]
    assert [alt["minItems"] for alt in lengths] == list(range(1, 13))
    second = schema["$defs"]["step_s2"]["anyOf"][0]["properties"]
    assert second["id"] == {"const": "s2"}
    assert second["depends_on"]["items"] == {"enum": ["s1"]}
    assert "depends_on" not in schema["$defs"]["step_s1"]["anyOf"][0]["properties"]
    assert result.plan is not None
    assert [s.id for s in result.plan.steps] == ["s1", "s2"]
    assert tools.names() == ["lookup", "report"]
