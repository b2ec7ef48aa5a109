"""What a PydanticAI 2.x user reaches for, with PydanticAI's meaning: `system_prompt`, `agent.override`,
`result.usage` as a property, synchronous approval, `DeferredCall.args` as a dict, `retries=`, the
`test` model string, and errors that name the method the user called."""

from __future__ import annotations

from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.agent import Approved
from ferrule.agent import Denied
from ferrule.agent import Paused
from ferrule.agent import RunContext
from ferrule.agent.exceptions import PauseRequiredError
from ferrule.agent.testing import FunctionModel
from ferrule.agent.testing import TestModel
from ferrule.core.errors import UserError
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.usage import RunUsage
from tests.support.scripts import Script
from tests.support.scripts import call
from tests.support.scripts import text

pytestmark = pytest.mark.anyio


# --- system prompts ----------------------------------------------------------------------------------


def test_system_prompts_are_parts_of_the_first_request_and_stay_in_history() -> None:
    script = Script(text("hi"), text("again"))
    agent = Agent(FunctionModel(script), deps_type=str, system_prompt="Be brief.", instructions="Say hi.")

    @agent.system_prompt
    def name(ctx: RunContext[str]) -> str:
        return f"The user's name is {ctx.deps}."

    first = agent.run_sync("hello", deps="Ada")
    request = first.all_messages()[0]
    assert isinstance(request, ModelRequest)
    assert [type(p) for p in request.parts] == [SystemPromptPart, SystemPromptPart, UserPromptPart]
    assert [p.content for p in request.parts if isinstance(p, SystemPromptPart)] == [
        "Be brief.",
        "The user's name is Ada.",
    ]
    assert request.instructions == "Say hi."  # instructions stay separate, sent with every request
    # A run continuing the history adds no second system prompt (PydanticAI's rule).
    second = agent.run_sync("more", deps="Bob", message_history=first.all_messages())
    parts = [p for m in second.all_messages() if isinstance(m, ModelRequest) for p in m.parts]
    assert sum(isinstance(p, SystemPromptPart) for p in parts) == 2
    assert "The user's name is Ada." in [p.content for p in parts if isinstance(p, SystemPromptPart)]


def test_a_dynamic_system_prompt_is_re_evaluated_on_a_continued_history() -> None:
    agent = Agent(FunctionModel(Script()), deps_type=str)

    @agent.system_prompt(dynamic=True)
    def name(ctx: RunContext[str]) -> str:
        return f"The user's name is {ctx.deps}."

    first = agent.run_sync("hello", deps="Ada")
    history = first.all_messages()
    second = agent.run_sync("more", deps="Bob", message_history=history)
    prompt = second.all_messages()[0]
    assert isinstance(prompt, ModelRequest)
    part = prompt.parts[0]
    assert isinstance(part, SystemPromptPart)
    assert part.content == "The user's name is Bob."
    assert part.dynamic_ref is not None
    original = history[0]
    assert isinstance(original, ModelRequest)
    kept = original.parts[0]
    assert isinstance(kept, SystemPromptPart)
    assert kept.content == "The user's name is Ada."


def test_system_prompt_must_be_text() -> None:
    with pytest.raises(UserError, match=r"@agent\.system_prompt"):
        Agent(TestModel(), system_prompt=[lambda: "x"])  # type: ignore[list-item]


# --- override ----------------------------------------------------------------------------------------


async def test_override_replaces_model_and_deps_inside_the_block_only() -> None:
    seen: list[Any] = []
    agent = Agent("test:default", deps_type=str)

    @agent.tool
    def who(ctx: RunContext[str]) -> str:
        """Who is asking."""
        seen.append(ctx.deps)
        return ctx.deps

    replacement = TestModel(model_name="replacement")
    with agent.override(model=replacement, deps="overridden"):
        result = await agent.run("go", deps="given", model=TestModel(model_name="ignored"))
        with agent.override(deps="inner"):  # nesting keeps the outer model
            inner = await agent.run("go", deps="given")
    outside = await agent.run("go", deps="given")
    assert seen == ["overridden", "inner", "given"]
    assert [_answered_by(r) for r in (result, inner, outside)] == ["replacement", "replacement", "default"]


def _answered_by(result: AgentRunResult[Any]) -> str | None:
    last = result.all_messages()[-1]
    assert isinstance(last, ModelResponse)
    return last.model_name


def test_override_with_a_bad_model_string_fails_at_once() -> None:
    agent = Agent(TestModel())
    with pytest.raises(UserError, match="provider:model"), agent.override(model="nonsense"):
        pass


# --- usage, retries, the test model ---------------------------------------------------------------------


def test_usage_is_a_property() -> None:
    result = Agent("test").run_sync("hi")
    assert isinstance(result.usage, RunUsage)
    assert result.usage.requests == 1
    assert result.output == "success (no tool calls)"


def test_retries_accepts_what_pydantic_ai_accepts() -> None:
    agent = Agent(TestModel(), retries={"tools": 3, "output": 2})
    assert agent._core.retries == 3
    assert agent._core.output_retries == 2
    with pytest.raises(UserError, match=r"Agent\(retries=n, output_retries=m\)"):
        Agent(TestModel(), retries={"tool": 3})
    with pytest.raises(UserError, match=r"Agent\(retries=n, output_retries=m\)"):
        Agent(TestModel(), retries="3")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="not both"):
        Agent(TestModel(), retries={"output": 2}, output_retries=1)


# --- synchronous approval ---------------------------------------------------------------------------------


def _approval_agent(script: Script) -> tuple[Agent[None, str], list[str]]:
    deleted: list[str] = []
    agent = Agent(FunctionModel(script))

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    return agent, deleted


def test_a_synchronous_approval_round_trip() -> None:
    # The model sends the arguments as JSON text: DeferredCall.args is a dict all the same.
    script = Script(call("delete_file", '{"path": "a.txt"}'), text("Deleted a.txt."))
    agent, deleted = _approval_agent(script)
    paused = agent.run_until_pause_sync("Delete a.txt")
    assert isinstance(paused, Paused)
    [pending] = paused.pending
    assert pending.args == {"path": "a.txt"}
    assert deleted == []
    result = agent.resume_sync(paused.state, {pending.tool_call_id: Approved()})
    assert not isinstance(result, Paused)
    assert result.output == "Deleted a.txt."
    assert deleted == ["a.txt"]
    returned = [p for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts]
    assert any(isinstance(p, ToolReturnPart) and p.content == "deleted a.txt" for p in returned)


def test_a_synchronous_denial_round_trip() -> None:
    script = Script(call("delete_file", {"path": "b.txt"}), text("Not deleted."))
    agent, deleted = _approval_agent(script)
    paused = agent.run_until_pause_sync("Delete b.txt")
    assert isinstance(paused, Paused)
    result = agent.resume_sync(paused.state.to_json(), {paused.pending[0].tool_call_id: Denied(message="no")})
    assert not isinstance(result, Paused)
    assert result.output == "Not deleted."
    assert deleted == []


def test_run_sync_names_run_sync_and_its_sync_alternatives() -> None:
    agent, _ = _approval_agent(Script(call("delete_file", {"path": "c.txt"})))
    with pytest.raises(PauseRequiredError) as info:
        agent.run_sync("Delete c.txt")
    message = str(info.value)
    assert "instead of agent.run_sync()" in message
    assert "agent.run_until_pause_sync() and agent.resume_sync()" in message


async def test_run_names_run() -> None:
    agent, _ = _approval_agent(Script(call("delete_file", {"path": "c.txt"})))
    with pytest.raises(
        PauseRequiredError, match=r"agent.run_until_pause\(\) and agent.resume\(\) instead of agent.run\(\)"
    ):
        await agent.run("Delete c.txt")


async def test_the_sync_forms_are_refused_inside_an_event_loop_naming_themselves() -> None:
    agent = Agent(TestModel())
    with pytest.raises(UserError, match=r"run_until_pause_sync\(\) cannot be called from async code"):
        agent.run_until_pause_sync("x")
    with pytest.raises(UserError, match=r"run_sync\(\) cannot be called from async code"):
        agent.run_sync("x")
