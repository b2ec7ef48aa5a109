"""Tool policies: the prepare, arguments, approval, call and return stages, and their order."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Capability
from ferrule.agent import ModelRetry
from ferrule.agent import Paused
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolPolicy
from ferrule.agent.exceptions import ToolDefinitionError
from ferrule.agent.exceptions import ToolRetriesExceeded
from ferrule.agent.testing import FunctionModel
from ferrule.agent.toolsets import FunctionToolset
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import ToolDefinition
from tests.support.scripts import Script
from tests.support.scripts import call
from tests.support.scripts import text

from ._support import request_parts

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Recorder(ToolPolicy):
    """Records every stage it sees, tagged with its name."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def on_prepare(self, ctx: RunContext[Any], definition: ToolDefinition) -> ToolDefinition:
        self.log.append(f"{self.name}:prepare:{definition.name}")
        return definition

    def on_arguments(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> Any:
        self.log.append(f"{self.name}:arguments")
        return args

    def on_approval(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> bool | None:
        self.log.append(f"{self.name}:approval")
        return None

    def on_call(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> None:
        self.log.append(f"{self.name}:call")

    def on_return(self, ctx: RunContext[Any], call: ToolCallPart, value: Any) -> Any:
        self.log.append(f"{self.name}:return")
        return value


async def test_stages_run_in_order_agent_policies_first_then_capabilities() -> None:
    log: list[str] = []
    capability = Capability("cap", tool_policies=[Recorder("cap", log)])
    agent = Agent(
        FunctionModel(Script(call("add", {"a": 1, "b": 2}), text("ok"))),
        tools=[add],
        tool_policies=[Recorder("agent", log)],
        capabilities=[capability],
    )
    await agent.run("go")
    assert log == [
        "agent:prepare:add",
        "cap:prepare:add",
        "agent:arguments",
        "cap:arguments",
        "agent:approval",
        "cap:approval",
        "agent:call",
        "cap:call",
        "agent:return",
        "cap:return",
        "agent:prepare:add",
        "cap:prepare:add",
    ]


async def test_prepare_may_hide_or_redescribe_but_not_rename() -> None:
    class Hide(ToolPolicy):
        def on_prepare(self, ctx: RunContext[Any], definition: ToolDefinition) -> ToolDefinition | None:
            if definition.name == "secret":
                return None
            return msgspec.structs.replace(definition, description="policy says hi")

    script = Script()
    await Agent(FunctionModel(script), tools=[add, Tool(add, name="secret")], tool_policies=[Hide()]).run(
        "go"
    )
    assert [(d.name, d.description) for d in script.tools[0]] == [("add", "policy says hi")]

    class Rename(ToolPolicy):
        def on_prepare(self, ctx: RunContext[Any], definition: ToolDefinition) -> ToolDefinition:
            return msgspec.structs.replace(definition, name="other")

    with pytest.raises(ToolDefinitionError, match="renamed tool 'add'"):
        await Agent(FunctionModel(Script()), tools=[add], tool_policies=[Rename()]).run("go")


async def test_arguments_may_be_transformed_with_a_dict() -> None:
    class Clamp(ToolPolicy):
        async def on_arguments(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> Any:
            return {"a": min(args.a, 10), "b": args.b}

    agent = Agent(
        FunctionModel(Script(call("add", {"a": 500, "b": 1}))), tools=[add], tool_policies=[Clamp()]
    )
    result = await agent.run("go")
    assert request_parts(result.all_messages(), (ToolReturnPart, RetryPromptPart))[0].content == 11


async def test_argument_retry_is_counted_against_the_tool_budget() -> None:
    class NoNegatives(ToolPolicy):
        def on_arguments(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> Any:
            if args.a < 0:
                raise ModelRetry("a must not be negative")
            return args

    ran: list[int] = []

    def tracked(a: int, b: int) -> int:
        ran.append(a)
        return a + b

    # exactly the budget (1 retry): the second bad call ends the run
    agent = Agent(
        FunctionModel(Script(call("tracked", {"a": -1, "b": 0}), call("tracked", {"a": -2, "b": 0}, "c2"))),
        tools=[tracked],
        tool_policies=[NoNegatives()],
    )
    with pytest.raises(ToolRetriesExceeded):
        await agent.run("go")
    assert ran == []
    # within the budget: one rejection, then a good call
    agent = Agent(
        FunctionModel(
            Script(call("tracked", {"a": -1, "b": 0}), call("tracked", {"a": 3, "b": 0}, "c2"), text("ok"))
        ),
        tools=[tracked],
        tool_policies=[NoNegatives()],
    )
    result = await agent.run("go")
    parts = request_parts(result.all_messages(), (ToolReturnPart, RetryPromptPart))
    assert isinstance(parts[0], RetryPromptPart)
    assert parts[0].content == "a must not be negative"
    assert ran == [3]


async def test_approval_policy_pauses_and_the_decision_survives_resume() -> None:
    class Big(ToolPolicy):
        def on_approval(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> bool:
            return args.a > 100

    ran: list[int] = []

    def pay(a: int) -> str:
        """Pay."""
        ran.append(a)
        return "paid"

    def make(*responses: ModelResponse) -> Agent[None, str]:
        return Agent(FunctionModel(Script(*responses)), tools=[pay], tool_policies=[Big()])

    result = await make(call("pay", {"a": 5}), text("ok")).run_until_pause("small")
    assert not isinstance(result, Paused)
    assert ran == [5]
    paused = await make(call("pay", {"a": 500})).run_until_pause("big")
    assert isinstance(paused, Paused)
    assert [p.tool_name for p in paused.pending] == ["pay"]
    resumed = await make(text("ok")).resume(paused.to_json(), {"c1": Approved()})
    assert not isinstance(resumed, Paused)
    assert ran == [5, 500]


async def test_call_stage_refuses_without_running() -> None:
    class NoDeletes(ToolPolicy):
        tools = frozenset({"fs__delete"})

        def on_call(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> None:
            raise ModelRetry("Deleting is not allowed.")

    ran: list[str] = []

    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    def read(path: str) -> str:
        """Read a file."""
        ran.append(f"read {path}")
        return "data"

    script = Script(
        ModelResponse(
            parts=[
                ToolCallPart(tool_name="fs__delete", args={"path": "x"}, tool_call_id="d"),
                ToolCallPart(tool_name="fs__read", args={"path": "y"}, tool_call_id="r"),
            ]
        ),
        text("ok"),
    )
    agent = Agent(
        FunctionModel(script),
        toolsets=[FunctionToolset([delete, read]).prefixed("fs")],
        tool_policies=[NoDeletes()],
    )
    result = await agent.run("go")
    assert ran == ["read y"]
    refused, read_result = request_parts(result.all_messages(), (ToolReturnPart, RetryPromptPart))
    assert isinstance(refused, RetryPromptPart)
    assert refused.content == "Deleting is not allowed."
    assert isinstance(read_result, ToolReturnPart)
    assert result.usage.tool_calls == 1


async def test_return_stage_transforms_or_retries() -> None:
    class Redact(ToolPolicy):
        def on_return(self, ctx: RunContext[Any], call: ToolCallPart, value: Any) -> Any:
            if value == "secret":
                raise ModelRetry("That result is classified; ask for something else.")
            return str(value).upper()

    def echo(word: str) -> str:
        return word

    script = Script(call("echo", {"word": "hi"}), call("echo", {"word": "secret"}, "c2"), text("ok"))
    result = await Agent(FunctionModel(script), tools=[echo], tool_policies=[Redact()]).run("go")
    first, second = request_parts(result.all_messages(), (ToolReturnPart, RetryPromptPart))
    assert isinstance(first, ToolReturnPart)
    assert first.content == "HI"
    assert isinstance(second, RetryPromptPart)
    assert second.content == "That result is classified; ask for something else."


async def test_policies_do_not_apply_to_framework_tools() -> None:
    class RefuseAll(ToolPolicy):
        def on_prepare(self, ctx: RunContext[Any], definition: ToolDefinition) -> None:
            return None

        def on_call(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> None:
            raise ModelRetry("no")

    capability = Capability("extra", description="More tools", tools=[add], loading="on_demand")
    script = Script(call("load_capability", {"capability": "extra"}), text("ok"))
    agent = Agent(FunctionModel(script), capabilities=[capability], tool_policies=[RefuseAll()])
    result = await agent.run("go")
    assert [d.name for d in script.tools[0]] == ["load_capability"]
    loaded = request_parts(result.all_messages(), (ToolReturnPart, RetryPromptPart))[0]
    assert isinstance(loaded, ToolReturnPart)
    assert loaded.content == "Loaded capability 'extra'."
    assert [d.name for d in script.tools[1]] == ["load_capability"]  # add is hidden by the policy


def test_agent_refuses_non_policies() -> None:
    from ferrule.core.errors import UserError

    with pytest.raises(UserError, match="ToolPolicy"):
        Agent(FunctionModel(Script()), tool_policies=[object()])  # type: ignore[list-item]
