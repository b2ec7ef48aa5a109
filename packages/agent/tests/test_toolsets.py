"""Toolsets: static and per-step prepared tools, namespaces, filtering, renaming, metadata, lifecycle."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Paused
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent.exceptions import ToolDefinitionError
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.agent.toolsets import AbstractToolset
from ferrule.agent.toolsets import CombinedToolset
from ferrule.agent.toolsets import FunctionToolset
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
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


def mul(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


async def test_function_toolset_tools_are_offered_and_run() -> None:
    script = Script(call("add", {"a": 2, "b": 3}))
    agent = Agent(FunctionModel(script), toolsets=[FunctionToolset([add, mul])])
    result = await agent.run("go")
    assert script.names() == ["add", "mul"]
    assert [r.content for r in request_parts(result.all_messages(), ToolReturnPart)] == [5]


async def test_run_level_toolsets_come_after_agent_toolsets() -> None:
    script = Script()
    agent = Agent(FunctionModel(script), tools=[add], toolsets=[FunctionToolset([mul])])
    await agent.run("go", toolsets=[FunctionToolset([Tool(add, name="plus")])])
    assert script.names() == ["add", "mul", "plus"]


async def test_namespaces_prefix_names_and_call_the_original_function() -> None:
    script = Script(call("math__mul", {"a": 4, "b": 5}))
    agent = Agent(FunctionModel(script), toolsets=[FunctionToolset([add, mul]).prefixed("math")])
    result = await agent.run("go")
    assert script.names() == ["math__add", "math__mul"]
    assert script.tools[0][0].description == "Add two numbers."
    [ret] = request_parts(result.all_messages(), ToolReturnPart)
    assert (ret.tool_name, ret.content) == ("math__mul", 20)


@pytest.mark.parametrize("namespace", ["", "a__b", "sp ace", "dot.ted"])
def test_invalid_namespaces_are_refused(namespace: str) -> None:
    with pytest.raises(ToolDefinitionError, match="namespace"):
        FunctionToolset([add]).prefixed(namespace)


async def test_filtered_and_renamed_toolsets() -> None:
    script = Script(call("sum", {"a": 1, "b": 1}))
    toolset = FunctionToolset([add, mul]).filtered(lambda ctx, d: d.name != "mul").renamed({"add": "sum"})
    result = await Agent(FunctionModel(script), toolsets=[toolset]).run("go")
    assert script.names() == ["sum"]
    assert [r.content for r in request_parts(result.all_messages(), ToolReturnPart)] == [2]


async def test_preparer_sees_the_run_and_enables_tools_per_step() -> None:
    seen: list[tuple[int, int, int, str]] = []

    def preparer(ctx: RunContext[str], definitions: list[ToolDefinition]) -> list[ToolDefinition]:
        seen.append((ctx.run_step, len(ctx.messages), ctx.usage.requests, ctx.deps))
        # Step 0 offers only add; later steps only mul.
        wanted = "add" if ctx.run_step == 0 else "mul"
        return [d for d in definitions if d.name == wanted]

    script = Script(call("add", {"a": 1, "b": 2}), text("ok"))
    agent = Agent(
        FunctionModel(script), deps_type=str, toolsets=[FunctionToolset[str]([add, mul]).prepared(preparer)]
    )
    await agent.run("go", deps="D")
    assert script.names(0) == ["add"]
    assert script.names(1) == ["mul"]
    assert seen == [(0, 1, 0, "D"), (1, 3, 1, "D")]


async def test_preparer_disabling_a_tool_makes_calls_to_it_unknown() -> None:
    script = Script(call("mul", {"a": 1, "b": 2}), text("ok"))
    toolset = FunctionToolset([add, mul]).prepared(lambda ctx, defs: [d for d in defs if d.name == "add"])
    result = await Agent(FunctionModel(script), toolsets=[toolset]).run("go")
    retry = result.all_messages()[2].parts[0]
    assert "Unknown tool name: 'mul'" in str(getattr(retry, "content", ""))


async def test_async_preparer_may_change_descriptions() -> None:
    async def preparer(ctx: RunContext[None], definitions: list[ToolDefinition]) -> list[ToolDefinition]:
        return [msgspec.structs.replace(d, description=f"v2: {d.description}") for d in definitions]

    script = Script()
    await Agent(FunctionModel(script), toolsets=[FunctionToolset([add]).prepared(preparer)]).run("go")
    assert script.tools[0][0].description == "v2: Add two numbers."


async def test_metadata_merges_tool_then_toolset_then_prepared_entry() -> None:
    tool = Tool(add, metadata={"owner": "tool", "a": 1})
    toolset = FunctionToolset([tool], metadata={"owner": "toolset", "b": 2})

    def preparer(ctx: RunContext[None], definitions: list[ToolDefinition]) -> list[ToolDefinition]:
        return [msgspec.structs.replace(d, metadata={"owner": "prepared", "c": 3}) for d in definitions]

    script = Script()
    await Agent(FunctionModel(script), toolsets=[toolset.with_metadata({"d": 4}).prepared(preparer)]).run(
        "go"
    )
    assert script.tools[0][0].metadata == {"owner": "prepared", "a": 1, "b": 2, "d": 4, "c": 3}


async def test_duplicate_names_are_rejected_before_the_request() -> None:
    script = Script()
    agent = Agent(FunctionModel(script), tools=[add], toolsets=[FunctionToolset([add])])
    with pytest.raises(ToolDefinitionError, match="two tools are named 'add'"):
        await agent.run("go")
    assert script.tools == []  # the model was never called


async def test_namespacing_resolves_a_duplicate() -> None:
    script = Script()
    agent = Agent(FunctionModel(script), tools=[add], toolsets=[FunctionToolset([add]).prefixed("other")])
    await agent.run("go")
    assert script.names() == ["add", "other__add"]


def _twice(ctx: RunContext[None], defs: list[ToolDefinition]) -> list[ToolDefinition]:
    return [*defs, *defs]


def _invented(ctx: RunContext[None], defs: list[ToolDefinition]) -> list[ToolDefinition]:
    return [ToolDefinition(name="invented")]


def _new_schema(ctx: RunContext[None], defs: list[ToolDefinition]) -> list[ToolDefinition]:
    return [msgspec.structs.replace(d, parameters_json_schema={"type": "object"}) for d in defs]


@pytest.mark.parametrize(
    ("preparer", "message"),
    [
        (_twice, "returned the tool 'add' twice"),
        (_invented, "not one of its tools"),
        (_new_schema, "parameter schema"),
    ],
)
async def test_preparer_mistakes_fail_before_the_request(preparer: Any, message: str) -> None:
    script = Script()
    agent = Agent(FunctionModel(script), toolsets=[FunctionToolset([add]).prepared(preparer)])
    with pytest.raises(ToolDefinitionError, match=message):
        await agent.run("go")
    assert script.tools == []


async def test_output_tool_name_clash_is_rejected() -> None:
    class Out(msgspec.Struct):
        x: int

    agent = Agent(
        FunctionModel(Script()), output_type=Out, toolsets=[FunctionToolset([Tool(add, name="final_result")])]
    )
    with pytest.raises(ToolDefinitionError, match="final_result"):
        await agent.run("go")


class Tracked(AbstractToolset[Any]):
    """A toolset that records its lifecycle and the task it was entered in."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.id = "tracked"

    async def __aenter__(self) -> Tracked:
        self.log.append("enter")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.log.append("exit")

    async def get_tools(self, ctx: RunContext[Any]) -> Sequence[Tool[Any]]:
        self.log.append(f"tools@{ctx.run_step}")
        return [Tool(add)]


async def test_toolsets_are_entered_once_per_run_and_asked_every_step() -> None:
    tracked = Tracked()
    script = Script(call("add", {"a": 1, "b": 1}), text("ok"))
    agent = Agent(FunctionModel(script), toolsets=[tracked, tracked.prefixed("again")])
    await agent.run("go")
    assert tracked.log == ["enter", "tools@0", "tools@0", "tools@1", "tools@1", "exit"]
    assert script.names() == ["add", "again__add"]


async def test_toolsets_exit_when_the_run_fails() -> None:
    tracked = Tracked()

    def boom(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("model down")

    with pytest.raises(RuntimeError, match="model down"):
        await Agent(FunctionModel(boom), toolsets=[tracked]).run("go")
    assert tracked.log[0] == "enter"
    assert tracked.log[-1] == "exit"


async def test_toolsets_in_streamed_and_stepwise_runs() -> None:
    tracked = Tracked()
    agent = Agent(FunctionModel(Script(call("add", {"a": 2, "b": 2}), text("ok"))), toolsets=[tracked])
    async with agent.run_stream("go") as stream:
        assert await stream.get_output() == "ok"
    assert tracked.log[0] == "enter"
    assert tracked.log[-1] == "exit"
    tracked.log.clear()
    agent = Agent(FunctionModel(Script(call("add", {"a": 2, "b": 2}), text("ok"))), toolsets=[tracked])
    async with agent.iter("go") as run:
        async for _ in run:
            assert tracked.log[0] == "enter"
        assert run.result is not None
        assert "exit" not in tracked.log
    assert tracked.log[-1] == "exit"


async def test_combined_toolset_enters_all_and_keeps_order() -> None:
    first, second = Tracked(), Tracked()
    script = Script()
    combined = CombinedToolset([first, second.renamed({"add": "add2"})])
    await Agent(FunctionModel(script), toolsets=[combined]).run("go")
    assert script.names() == ["add", "add2"]
    assert first.log[0] == second.log[0] == "enter"
    assert first.log[-1] == second.log[-1] == "exit"


async def test_paused_toolset_call_resumes_with_the_toolset_tool() -> None:
    ran: list[int] = []

    def pay(amount: int) -> str:
        """Pay."""
        ran.append(amount)
        return "paid"

    def make_agent(*responses: ModelResponse) -> Agent[None, str]:
        script = Script(*responses)
        toolset = FunctionToolset([Tool(pay, requires_approval=True)]).prefixed("bank")
        return Agent(FunctionModel(script), toolsets=[toolset])

    outcome = await make_agent(call("bank__pay", {"amount": 5})).run_until_pause("pay")
    assert isinstance(outcome, Paused)
    assert ran == []
    data = outcome.to_json()
    resumed = await make_agent(text("ok")).resume(data, {"c1": Approved()})
    assert not isinstance(resumed, Paused)
    assert ran == [5]
    assert resumed.output == "ok"


def test_function_toolset_refuses_duplicate_names() -> None:
    with pytest.raises(ToolDefinitionError, match="two tools named 'add'"):
        FunctionToolset([add, add])
    toolset = FunctionToolset([add])
    with pytest.raises(ToolDefinitionError, match="already has a tool named 'add'"):
        toolset.add_tool(add)

    @toolset.tool
    def sub(a: int, b: int) -> int:
        return a - b

    assert [t.name for t in toolset.tools] == ["add", "sub"]


def test_agent_refuses_non_toolsets() -> None:
    from ferrule.core.errors import UserError

    with pytest.raises(UserError, match="AbstractToolset"):
        Agent(FunctionModel(Script()), toolsets=[add])  # type: ignore[list-item]


async def test_schema_tools_receive_the_validated_dict_and_survive_wrapping() -> None:
    received: list[tuple[Any, dict[str, Any]]] = []

    async def handler(ctx: RunContext[str], args: dict[str, Any]) -> str:
        received.append((ctx.deps, args))
        return f"hello {args['who']}"

    def plain(args: dict[str, Any]) -> int:
        return len(args["who"])

    schema = {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}
    greet = Tool.from_schema(handler, name="greet", parameters_json_schema=schema, description="Greet.")
    count = Tool.from_schema(plain, name="count", parameters_json_schema=schema, takes_ctx=False)
    assert greet.definition.kind == "function"
    script = Script(
        ModelResponse(
            parts=[
                ToolCallPart(tool_name="srv__greet", args={"who": "ada"}, tool_call_id="g"),
                ToolCallPart(tool_name="srv__count", args='{"who": "bob"}', tool_call_id="c"),
                ToolCallPart(tool_name="srv__greet", args={"who": 3}, tool_call_id="bad"),
            ]
        ),
        text("ok"),
    )
    agent = Agent(
        FunctionModel(script), deps_type=str, toolsets=[FunctionToolset([greet, count]).prefixed("srv")]
    )
    result = await agent.run("go", deps="D")
    assert received == [("D", {"who": "ada"})]
    parts = result.all_messages()[2].parts
    assert [getattr(p, "content", None) for p in parts[:2]] == ["hello ada", 3]
    assert type(parts[2]).__name__ == "RetryPromptPart"
