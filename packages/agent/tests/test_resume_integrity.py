"""Resume re-derives which calls need a decision, and concurrent resumes of one pause stay apart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.agent import Approved
from ferrule.agent import Capability
from ferrule.agent import DeferredCall
from ferrule.agent import ExternalResult
from ferrule.agent import Paused
from ferrule.agent import PausedState
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent.exceptions import DecisionError
from ferrule.agent.exceptions import PausedStateError
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import CapabilityLoadDeltaPart
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import UserPromptPart

from ._support import request_parts

pytestmark = pytest.mark.anyio


class World:
    """What the tools did, so a refused resume can be shown to have run nothing."""

    def __init__(self) -> None:
        self.executed: list[str] = []
        self.requests = 0


def build(world: World) -> Agent[None, str]:
    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        world.requests += 1
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if isinstance(last.parts[0], UserPromptPart):
            return ModelResponse(
                parts=[
                    ToolCallPart(tool_name="lookup", args={"q": "balance"}, tool_call_id="read"),
                    ToolCallPart(tool_name="transfer", args={"amount": 500}, tool_call_id="big"),
                    ToolCallPart(tool_name="ship", args={"address": "x"}, tool_call_id="ext"),
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    def lookup(q: str) -> str:
        world.executed.append(f"lookup:{q}")
        return "1000"

    def transfer(amount: int) -> str:
        world.executed.append(f"transfer:{amount}")
        return f"sent {amount}"

    def ship(address: str) -> str:
        """Done by the warehouse; a real function, so running it here would be visible."""
        world.executed.append(f"ship:{address}")
        return "shipped here"

    return Agent(
        FunctionModel(respond),
        tools=[
            lookup,
            Tool(transfer, requires_approval=lambda ctx, args: args.amount > 100),
            Tool(ship, external=True),
        ],
    )


async def paused(world: World) -> PausedState:
    outcome = await build(world).run_until_pause("pay")
    assert isinstance(outcome, Paused)
    assert [p.tool_call_id for p in outcome.pending] == ["big", "ext"]
    assert outcome.state.immediate_call_ids == ["read"]
    return outcome.state


def moved_to_immediate(state: PausedState, call_id: str) -> PausedState:
    return msgspec.structs.replace(
        state,
        pending=[p for p in state.pending if p.tool_call_id != call_id],
        immediate_call_ids=[*state.immediate_call_ids, call_id],
    )


@pytest.mark.parametrize("as_json", [False, True])
async def test_an_approval_call_moved_out_of_pending_is_refused_and_nothing_runs(as_json: bool) -> None:
    world = World()
    state = moved_to_immediate(await paused(world), "big")
    forged: PausedState | bytes = state.to_json() if as_json else state
    with pytest.raises(PausedStateError) as caught:
        await build(world).resume(forged, {"ext": ExternalResult(value="shipped")})
    assert str(caught.value).startswith(
        "the paused state does not list call 'big' (transfer) as pending, but the tool needs approval; "
        "the state was modified or built by hand. Nothing was executed"
    )
    assert world.executed == []
    assert world.requests == 1


async def test_a_call_left_out_of_both_lists_is_refused_too() -> None:
    world = World()
    state = await paused(world)
    forged = msgspec.structs.replace(state, pending=[p for p in state.pending if p.tool_call_id != "big"])
    with pytest.raises(
        PausedStateError, match="'big' \\(transfer\\) as pending, but the tool needs approval"
    ):
        await build(world).resume(forged, {"ext": ExternalResult(value="shipped")})
    assert world.executed == []


async def test_an_external_call_moved_out_of_pending_is_refused() -> None:
    world = World()
    state = moved_to_immediate(await paused(world), "ext")
    with pytest.raises(PausedStateError, match="'ext' \\(ship\\) as pending, but the tool is external"):
        await build(world).resume(state, {"big": Approved()})
    assert world.executed == []


async def test_an_external_call_relabelled_as_approval_cannot_be_approved() -> None:
    world = World()
    state = await paused(world)
    relabelled = [
        DeferredCall(tool_call_id=p.tool_call_id, tool_name=p.tool_name, args=p.args, kind="approval")
        for p in state.pending
    ]
    forged = msgspec.structs.replace(state, pending=relabelled)
    with pytest.raises(DecisionError, match="call 'ext' \\(ship\\) is of an external tool"):
        await build(world).resume(forged, {"big": Approved(), "ext": Approved()})
    assert world.executed == []


async def test_an_honest_state_still_resumes() -> None:
    world = World()
    state = await paused(world)
    result = await build(world).resume(
        state.to_json(), {"big": Approved(), "ext": ExternalResult(value="ok")}
    )
    assert isinstance(result, AgentRunResult)
    assert result.output == "done"
    assert sorted(world.executed) == ["lookup:balance", "transfer:500"]


class Gate:
    """Holds every resume at its first tool until all of them have built their run."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.open = anyio.Event()


async def test_concurrent_resumes_of_two_pauses_keep_their_own_capabilities() -> None:
    offered: dict[str, list[list[str]]] = {}

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if isinstance(last.parts[0], UserPromptPart):
            return ModelResponse(
                parts=[
                    ToolCallPart(tool_name="gate", args={}, tool_call_id="g"),
                    ToolCallPart(tool_name="load_capability", args={"capability": "x"}, tool_call_id="l"),
                ]
            )
        names = sorted(t.name for t in info.function_tools)
        label = "one" if "x_one" in names else "two" if "x_two" in names else "none"
        offered.setdefault(label, []).append(names)
        return ModelResponse(parts=[TextPart(label)])

    async def gate(ctx: RunContext[Gate]) -> str:
        ctx.deps.arrived += 1
        if ctx.deps.arrived == ctx.deps.parties:
            ctx.deps.open.set()
        await ctx.deps.open.wait()
        return "open"

    def x_one() -> str:
        return "1"

    def x_two() -> str:
        return "2"

    def x_capability(tool: Any) -> Capability[Gate]:
        return Capability("x", description="Extra tools", tools=[tool], loading="on_demand")

    agent: Agent[Gate, str] = Agent(
        FunctionModel(respond), deps_type=Gate, tools=[Tool(gate, requires_approval=True)]
    )
    # Two pauses of the same kind (a paused state is resumed once: N-05), resumed concurrently.
    data: dict[str, bytes] = {}
    for label in ("one", "two"):
        outcome = await agent.run_until_pause("go", deps=Gate(1), capabilities=[x_capability(x_one)])
        assert isinstance(outcome, Paused)
        data[label] = outcome.to_json()

    gate_deps = Gate(2)
    results: dict[str, AgentRunResult[str] | Paused] = {}

    async def resume(label: str, tool: Any) -> None:
        results[label] = await agent.resume(
            data[label], {"g": Approved()}, deps=gate_deps, capabilities=[x_capability(tool)]
        )

    with anyio.fail_after(30):  # a guard against a regression deadlocking the gate; nothing is timed
        async with anyio.create_task_group() as tg:
            tg.start_soon(resume, "one", x_one)
            tg.start_soon(resume, "two", x_two)

    for label in ("one", "two"):
        result = results[label]
        assert isinstance(result, AgentRunResult)
        assert result.output == label  # each run's load activated its own capability's tools
        deltas = request_parts(result.all_messages(), CapabilityLoadDeltaPart)
        assert [d.loaded for d in deltas] == [["x"]]
    assert offered == {
        "one": [["gate", "load_capability", "x_one"]],
        "two": [["gate", "load_capability", "x_two"]],
    }
