"""Deferred tools: approval and external execution, pausing, JSON state, resume and its checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest
from inline_snapshot import snapshot

from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.agent import Approved
from ferrule.agent import Denied
from ferrule.agent import ExternalResult
from ferrule.agent import Paused
from ferrule.agent import PausedState
from ferrule.agent import PauseRequiredError
from ferrule.agent import ResumeDecisions
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent.exceptions import DecisionError
from ferrule.agent.exceptions import PausedStateError
from ferrule.agent.exceptions import PausedStateIntegrityError
from ferrule.agent.exceptions import PausedStateVersionError
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from tests.support.scripts import recorded

pytestmark = pytest.mark.anyio

KEY = b"integrity-key"


class World:
    """Side effects of one test, so resumes in fresh agents can be checked."""

    def __init__(self) -> None:
        self.executed: list[str] = []
        self.model_calls: list[list[Message]] = []


def model_for(world: World) -> FunctionModel:
    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        world.model_calls.append(list(messages))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if isinstance(last.parts[0], UserPromptPart):
            return ModelResponse(
                parts=[
                    ToolCallPart(tool_name="lookup", args={"q": "balance"}, tool_call_id="read"),
                    ToolCallPart(tool_name="transfer", args={"amount": 500}, tool_call_id="big"),
                    ToolCallPart(tool_name="transfer", args={"amount": 5}, tool_call_id="small"),
                    ToolCallPart(tool_name="ship", args={"address": "x"}, tool_call_id="ext"),
                ]
            )
        results = {p.tool_call_id: p for p in last.parts if isinstance(p, ToolReturnPart)}
        return ModelResponse(
            parts=[TextPart(repr(sorted((k, v.outcome, v.content) for k, v in results.items())))]
        )

    return FunctionModel(respond)


def build_agent(world: World, *, schema_variant: bool = False) -> Agent[World, str]:
    """The agent definition; every call builds a fresh agent, as another process would."""

    def lookup(q: str) -> str:
        world.executed.append(f"lookup:{q}")
        return "1000"

    def needs_approval(ctx: RunContext[World], args: Any) -> bool:
        return args.amount > 100

    def transfer(amount: int) -> str:
        world.executed.append(f"transfer:{amount}")
        return f"sent {amount}"

    def ship(address: str) -> str:
        """Ship a parcel (done by the warehouse system)."""
        raise AssertionError("external tools are never called")

    def ship_v2(address: str, express: bool) -> str:
        raise AssertionError

    return Agent(
        model_for(world),
        deps_type=World,
        tools=[
            lookup,
            Tool(transfer, requires_approval=needs_approval),
            Tool(ship_v2 if schema_variant else ship, name="ship", external=True),
        ],
    )


async def paused_run(world: World) -> Paused:
    outcome = await build_agent(world).run_until_pause("pay", deps=world)
    assert isinstance(outcome, Paused)
    return outcome


async def resumed(decisions: dict[str, Any]) -> tuple[World, AgentRunResult[str]]:
    """A paused run resumed by the same agent definition with `decisions`, which finish it; its world."""
    world = World()
    paused = await paused_run(world)
    result = await build_agent(world).resume(paused, decisions, deps=world)
    assert not isinstance(result, Paused)
    return world, result


def called(tool_name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A tool-call part as `recorded` writes it."""
    return {"part_kind": "tool-call", "tool_name": tool_name, "args": args, "tool_call_id": call_id}


def returned(tool_name: str, content: str, call_id: str) -> dict[str, Any]:
    """A successful tool-return part as `recorded` writes it."""
    return {"part_kind": "tool-return", "tool_name": tool_name, "content": content, "tool_call_id": call_id}


# The history of `paused_run` (the prompt, then the response whose calls pause), as `recorded` writes
# it: where every resumed run's history starts.
PAUSED_HISTORY: list[Any] = [
    {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "pay"}], "run_id": "run-1"},
    {
        "kind": "response",
        "parts": [
            called("lookup", {"q": "balance"}, "read"),
            called("transfer", {"amount": 500}, "big"),
            called("transfer", {"amount": 5}, "small"),
            called("ship", {"address": "x"}, "ext"),
        ],
        "usage": {"input_tokens": 51, "output_tokens": 12},
        "model_name": "function:respond",
        "provider_name": "function",
        "run_id": "run-1",
    },
]


def after_the_pause(messages: Sequence[Message]) -> list[Any]:
    """`messages` as `recorded` writes them, after `PAUSED_HISTORY`, which they must start with."""
    written = recorded(messages)
    assert written[:2] == PAUSED_HISTORY
    return written[2:]


async def test_pause_happens_before_any_call_of_the_response_runs() -> None:
    world = World()
    paused = await paused_run(world)
    assert world.executed == []
    assert [(p.tool_call_id, p.kind) for p in paused.pending] == [("big", "approval"), ("ext", "external")]
    assert paused.state.immediate_call_ids == ["read", "small"]
    assert paused.usage.requests == 1
    assert isinstance(paused.all_messages()[-1], ModelResponse)


async def test_resume_in_a_fresh_agent_from_json() -> None:
    world = World()
    data = (await paused_run(world)).to_json(integrity_key=KEY)
    assert isinstance(data, bytes)
    world2 = World()
    fresh = build_agent(world2)
    result = await fresh.resume(
        data,
        {"big": Approved(), "ext": ExternalResult(value={"tracking": "T1"})},
        deps=world2,
        integrity_key=KEY,
    )
    assert not isinstance(result, Paused)
    # Approved and immediate calls ran exactly once; the external call was not executed here.
    assert sorted(world2.executed) == ["lookup:balance", "transfer:5", "transfer:500"]
    # The original request was not replayed: only the follow-up request reached the model.
    assert len(world2.model_calls) == 1
    last = world2.model_calls[0][-1]
    assert isinstance(last, ModelRequest)
    assert [getattr(p, "tool_call_id", None) for p in last.parts] == ["read", "big", "small", "ext"]
    assert result.output == repr(
        sorted(
            [
                ("big", "success", "sent 500"),
                ("ext", "success", {"tracking": "T1"}),
                ("read", "success", "1000"),
                ("small", "success", "sent 5"),
            ]
        )
    )
    assert result.usage.requests == 2
    assert result.usage.tool_calls == 3
    # new_messages() covers the whole logical run, from the original prompt.
    assert after_the_pause(result.new_messages()) == snapshot(
        [
            {
                "kind": "request",
                "parts": [
                    returned("lookup", "1000", "read"),
                    returned("transfer", "sent 500", "big"),
                    returned("transfer", "sent 5", "small"),
                    {
                        "part_kind": "tool-return",
                        "tool_name": "ship",
                        "content": {"tracking": "T1"},
                        "tool_call_id": "ext",
                    },
                ],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [
                    {
                        "part_kind": "text",
                        "content": "[('big', 'success', 'sent 500'), ('ext', 'success', {'tracking': 'T1'}), ('read', 'success', '1000'), ('small', 'success', 'sent 5')]",
                    }
                ],
                "usage": {"input_tokens": 69, "output_tokens": 15},
                "model_name": "function:respond",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )


async def test_denial_becomes_an_error_result() -> None:
    world, result = await resumed({"big": Denied(message="too much money"), "ext": Denied()})
    assert sorted(world.executed) == ["lookup:balance", "transfer:5"]
    assert after_the_pause(result.all_messages()) == snapshot(
        [
            {
                "kind": "request",
                "parts": [
                    returned("lookup", "1000", "read"),
                    {
                        "part_kind": "tool-return",
                        "tool_name": "transfer",
                        "content": "too much money",
                        "tool_call_id": "big",
                        "outcome": "denied",
                    },
                    returned("transfer", "sent 5", "small"),
                    {
                        "part_kind": "tool-return",
                        "tool_name": "ship",
                        "content": "The tool call was denied.",
                        "tool_call_id": "ext",
                        "outcome": "denied",
                    },
                ],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [
                    {
                        "part_kind": "text",
                        "content": "[('big', 'denied', 'too much money'), ('ext', 'denied', 'The tool call was denied.'), ('read', 'success', '1000'), ('small', 'success', 'sent 5')]",
                    }
                ],
                "usage": {"input_tokens": 74, "output_tokens": 19},
                "model_name": "function:respond",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )


async def test_approval_with_override_args_is_validated() -> None:
    world, _ = await resumed(
        {"big": Approved(override_args={"amount": 100}), "ext": ExternalResult(value="ok")}
    )
    assert "transfer:100" in world.executed
    world = World()
    paused = await paused_run(world)
    with pytest.raises(DecisionError, match="override_args"):
        await build_agent(world).resume(
            paused, {"big": Approved(override_args={"amount": "lots"}), "ext": ExternalResult()}, deps=world
        )
    assert world.executed == []


async def test_external_error_result() -> None:
    _, result = await resumed({"big": Approved(), "ext": ExternalResult(value="warehouse down", error=True)})
    assert "('ext', 'failed', 'warehouse down')" in result.output
    assert after_the_pause(result.all_messages()) == snapshot(
        [
            {
                "kind": "request",
                "parts": [
                    returned("lookup", "1000", "read"),
                    returned("transfer", "sent 500", "big"),
                    returned("transfer", "sent 5", "small"),
                    {
                        "part_kind": "tool-return",
                        "tool_name": "ship",
                        "content": "warehouse down",
                        "tool_call_id": "ext",
                        "outcome": "failed",
                    },
                ],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [
                    {
                        "part_kind": "text",
                        "content": "[('big', 'success', 'sent 500'), ('ext', 'failed', 'warehouse down'), ('read', 'success', '1000'), ('small', 'success', 'sent 5')]",
                    }
                ],
                "usage": {"input_tokens": 70, "output_tokens": 15},
                "model_name": "function:respond",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )


@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        ({"big": Approved()}, "missing decisions for 'ext'"),
        ({"big": Approved(), "ext": ExternalResult(), "other": Approved()}, "not pending: 'other'"),
        ({"big": ExternalResult(), "ext": ExternalResult()}, "needs approval"),
        ({"big": Approved(), "ext": Approved()}, "is external"),
        ({"big": "yes", "ext": ExternalResult()}, "must be Approved"),
    ],
)
async def test_bad_decisions_are_rejected_and_nothing_executes(
    decisions: dict[str, Any], message: str
) -> None:
    world = World()
    paused = await paused_run(world)
    with pytest.raises(DecisionError, match=message):
        await build_agent(world).resume(paused, decisions, deps=world)
    assert world.executed == []
    assert len(world.model_calls) == 1


async def test_tampered_state_is_rejected() -> None:
    world = World()
    data = (await paused_run(world)).to_json(integrity_key=KEY)
    tampered = data.replace(b'"amount":500', b'"amount":900')
    assert tampered != data
    decisions = {"big": Approved(), "ext": ExternalResult()}
    with pytest.raises(PausedStateIntegrityError, match="modified"):
        await build_agent(world).resume(tampered, decisions, deps=world, integrity_key=KEY)
    with pytest.raises(PausedStateIntegrityError, match="modified"):
        await build_agent(world).resume(data, decisions, deps=world, integrity_key=b"other key")
    with pytest.raises(PausedStateIntegrityError, match="signed"):
        await build_agent(world).resume(data, decisions, deps=world)
    unsigned = (await paused_run(world)).to_json()
    with pytest.raises(PausedStateIntegrityError, match="not signed"):
        await build_agent(world).resume(unsigned, decisions, deps=world, integrity_key=KEY)
    assert world.executed == []


async def test_a_key_that_is_not_bytes_is_refused_without_echoing_it() -> None:
    world = World()
    paused = await paused_run(world)
    secret = "s3cret-key-text"
    with pytest.raises(UserError, match=r"integrity_key must be bytes, got str .*key\.encode\(\)") as raised:
        paused.to_json(integrity_key=secret)  # pyright: ignore[reportArgumentType]
    assert secret not in str(raised.value)
    signed = paused.to_json(integrity_key=secret.encode())
    with pytest.raises(UserError, match="integrity_key must be bytes, got str") as raised:
        PausedState.from_json(signed, integrity_key=secret)  # pyright: ignore[reportArgumentType]
    assert secret not in str(raised.value)
    with pytest.raises(UserError, match=r"integrity_key must be bytes, got int$"):
        PausedState.from_json(signed, integrity_key=1234)  # pyright: ignore[reportArgumentType]
    decisions = {"big": Approved(), "ext": ExternalResult()}
    with pytest.raises(UserError, match="integrity_key must be bytes, got str"):
        await build_agent(world).resume(signed, decisions, deps=world, integrity_key=secret)  # pyright: ignore[reportArgumentType]
    as_bytearray = bytearray(secret.encode())  # hmac takes it, so it stays accepted
    restored = PausedState.from_json(signed, integrity_key=as_bytearray)  # pyright: ignore[reportArgumentType]
    assert restored.state_id == paused.state.state_id
    assert world.executed == []


async def test_malformed_and_future_states_are_rejected() -> None:
    world = World()
    data = (await paused_run(world)).to_json()
    decisions = {"big": Approved(), "ext": ExternalResult()}
    envelope = msgspec.json.decode(data)
    future = msgspec.json.encode({**envelope, "version": 2})
    with pytest.raises(PausedStateVersionError, match="version 2"):
        await build_agent(world).resume(future, decisions, deps=world)
    for bad in (
        b"not json",
        b"[]",
        b"\xff\xfe",
        msgspec.json.encode({**envelope, "state": {**envelope["state"], "messages": 5}}),
        msgspec.json.encode({**envelope, "format": "something.else"}),
        msgspec.json.encode({**envelope, "state": {"run_id": "x"}}),
        msgspec.json.encode({**envelope, "version": 0}),
    ):
        with pytest.raises(PausedStateError):
            await build_agent(world).resume(bad, decisions, deps=world)
    state = envelope["state"]
    inconsistent = msgspec.json.encode({**envelope, "state": {**state, "pending": []}})
    with pytest.raises(PausedStateError, match="no pending"):
        await build_agent(world).resume(inconsistent, decisions, deps=world)
    assert world.executed == []


async def test_changed_tool_catalog_is_rejected() -> None:
    world = World()
    paused = await paused_run(world)
    changed = build_agent(world, schema_variant=True)
    with pytest.raises(PausedStateError, match="tools called by the paused response changed"):
        await changed.resume(paused, {"big": Approved(), "ext": ExternalResult()}, deps=world)
    assert world.executed == []


async def test_run_refuses_to_discard_a_pause() -> None:
    world = World()
    with pytest.raises(PauseRequiredError, match="run_until_pause") as info:
        await build_agent(world).run("pay", deps=world)
    assert [p.tool_call_id for p in info.value.paused.pending] == ["big", "ext"]
    assert info.value.run_state is not None
    assert world.executed == []


async def test_resume_can_pause_again() -> None:
    calls = 0

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls <= 2:
            return ModelResponse(parts=[ToolCallPart(tool_name="act", args={}, tool_call_id=f"a{calls}")])
        return ModelResponse(parts=[TextPart("finished")])

    acted: list[int] = []

    def act() -> str:
        acted.append(1)
        return "done"

    agent = Agent(FunctionModel(respond), tools=[Tool(act, requires_approval=True)])
    first = await agent.run_until_pause("go")
    assert isinstance(first, Paused)
    second = await agent.resume(first.to_json(), {"a1": Approved()})
    assert isinstance(second, Paused)
    assert second.state.state_id != first.state.state_id
    assert [p.tool_call_id for p in second.pending] == ["a2"]
    third = await agent.resume(second.state.to_json(), {"a2": Approved()})
    assert not isinstance(third, Paused)
    assert third.output == "finished"
    assert len(acted) == 2
    assert third.usage.requests == 3


async def test_decisions_json_wrapper() -> None:
    wrapper = ResumeDecisions(
        decisions={
            "a": Approved(override_args={"x": 1}),
            "b": Denied(message="no"),
            "c": ExternalResult(value=[1]),
        }
    )
    data = wrapper.to_json()
    assert ResumeDecisions.from_json(data) == wrapper.decisions
    with pytest.raises(DecisionError, match="version"):
        ResumeDecisions.from_json(
            msgspec.json.encode({"decisions": {}, "format": "ferrule.resume_decisions", "version": 9})
        )
    with pytest.raises(DecisionError, match="malformed"):
        ResumeDecisions.from_json(b'{"decisions": {"a": {"decision": "maybe"}}}')


async def test_resume_with_decisions_as_json() -> None:
    world = World()
    paused = await paused_run(world)
    decisions = ResumeDecisions(decisions={"big": Approved(), "ext": ExternalResult(value=1)}).to_json()
    result = await build_agent(world).resume(paused.to_json(), decisions, deps=world)
    assert not isinstance(result, Paused)


async def test_paused_state_survives_its_own_round_trip() -> None:
    world = World()
    paused = await paused_run(world)
    again = PausedState.from_json(paused.to_json())
    assert msgspec.json.encode(again) == msgspec.json.encode(paused.state)
    with pytest.raises(PausedStateError, match="integrity key only protects"):
        await build_agent(world).resume(paused.state, {}, deps=world, integrity_key=KEY)


async def test_external_tool_from_json_schema() -> None:
    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart(tool_name="browser", args={"url": "https://x"}, tool_call_id="b")]
            )
        return ModelResponse(parts=[TextPart("ok")])

    tool = Tool.external_tool(
        "browser",
        parameters_json_schema={
            "type": "object",
            "properties": {"url": {"type": "string"}},
            "required": ["url"],
        },
        description="Open a page in the user's browser.",
    )
    agent = Agent(FunctionModel(respond), tools=[tool])
    paused = await agent.run_until_pause("x")
    assert isinstance(paused, Paused)
    assert paused.pending[0].kind == "external"
    result = await agent.resume(paused, {"b": ExternalResult(value="<html>")})
    assert not isinstance(result, Paused)
    assert result.output == "ok"


async def test_iter_and_stream_pause_and_resume_stream() -> None:
    from ferrule.agent import FinalResultEvent
    from ferrule.agent import FunctionToolResultEvent
    from ferrule.agent import PausedStep

    world = World()
    agent = build_agent(world)
    async with agent.iter("pay", deps=world) as run:
        steps = [step async for step in run]
    assert isinstance(steps[-1], PausedStep)
    assert run.paused is not None
    assert run.result is None
    async with agent.resume_stream(
        run.paused, {"big": Approved(), "ext": ExternalResult(value="ok")}, deps=world
    ) as s:
        events = [e async for e in s]
    assert sum(isinstance(e, FunctionToolResultEvent) for e in events) == 4
    assert isinstance(events[-1], FinalResultEvent)
    assert sorted(world.executed) == ["lookup:balance", "transfer:5", "transfer:500"]


async def test_paused_state_keeps_files_in_earlier_tool_results() -> None:
    from ferrule.core.messages import BinaryContent

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        responses = sum(isinstance(m, ModelResponse) for m in messages)
        if responses == 0:
            return ModelResponse(parts=[ToolCallPart(tool_name="snapshot", args={}, tool_call_id="s")])
        if responses == 1:
            return ModelResponse(parts=[ToolCallPart(tool_name="publish", args={}, tool_call_id="p")])
        return ModelResponse(parts=[TextPart("published")])

    def snapshot() -> BinaryContent:
        return BinaryContent(data=b"\x89PNG...", media_type="image/png")

    def publish() -> str:
        return "ok"

    agent = Agent(FunctionModel(respond), tools=[snapshot, Tool(publish, requires_approval=True)])
    paused = await agent.run_until_pause("x")
    assert isinstance(paused, Paused)
    restored = PausedState.from_json(paused.to_json(integrity_key=KEY), integrity_key=KEY)
    request = restored.messages[2]
    assert isinstance(request, ModelRequest)
    part = request.parts[0]
    assert isinstance(part, ToolReturnPart)
    assert part.content == BinaryContent(data=b"\x89PNG...", media_type="image/png")
    result = await agent.resume(restored, {"p": Approved()})
    assert not isinstance(result, Paused)
    assert result.output == "published"


async def test_external_tool_arguments_checked_against_its_schema() -> None:
    from ferrule.agent.exceptions import ToolDefinitionError
    from ferrule.core.messages import RetryPromptPart

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(tool_name="browser", args={"url": 3}, tool_call_id="b")])
        return ModelResponse(parts=[TextPart("gave up")])

    schema = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
    agent = Agent(
        FunctionModel(respond), tools=[Tool.external_tool("browser", parameters_json_schema=schema)]
    )
    result = await agent.run_until_pause("x")
    assert not isinstance(result, Paused)  # the invalid call never paused: it went back to the model
    retry = result.all_messages()[2].parts[0]
    assert isinstance(retry, RetryPromptPart)
    assert not isinstance(retry.content, str)
    assert retry.content[0]["loc"] == ["url"]
    with pytest.raises(ToolDefinitionError, match="not usable"):
        Tool.external_tool("bad", parameters_json_schema={"type": "object", "patternProperties": {"a": {}}})
