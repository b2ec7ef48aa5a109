"""PydanticAI's deferred-tools API: a run that pauses ends with `DeferredToolRequests`, and a run
given its history and `DeferredToolResults` continues it, with every check of `resume`."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import DeferredToolRequests
from ferrule.agent import DeferredToolResults
from ferrule.agent import InMemoryCheckpointStore
from ferrule.agent import ModelRetry
from ferrule.agent import PauseRequiredError
from ferrule.agent import Tool
from ferrule.agent import ToolApproved
from ferrule.agent import ToolDenied
from ferrule.agent import ToolOutput
from ferrule.agent.exceptions import CheckpointConsumedError
from ferrule.agent.exceptions import DecisionError
from ferrule.agent.exceptions import OutputSpecError
from ferrule.agent.exceptions import PausedStateError
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core import history
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart


class World:
    """What the tools did and what the model was sent, per test."""

    def __init__(self) -> None:
        self.executed: list[str] = []
        self.last_request: ModelRequest | None = None


def build(
    world: World, store: InMemoryCheckpointStore | None = None
) -> Agent[None, str | DeferredToolRequests]:
    """An agent whose model calls an approval tool twice and an external tool once, then reports."""

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        world.last_request = last
        if any(isinstance(p, UserPromptPart) for p in last.parts) and not any(
            isinstance(p, ToolReturnPart) for p in last.parts
        ):
            return ModelResponse(
                parts=[
                    ToolCallPart("transfer", {"amount": 500}, tool_call_id="big"),
                    ToolCallPart("transfer", {"amount": 7}, tool_call_id="small"),
                    ToolCallPart("ship", {"address": "x"}, tool_call_id="ext"),
                ]
            )
        returns = [p for m in messages[-2:] if isinstance(m, ModelRequest) for p in m.parts]
        text = sorted(
            (p.tool_call_id, p.outcome, str(p.content)) for p in returns if isinstance(p, ToolReturnPart)
        )
        return ModelResponse(parts=[TextPart(repr(text))])

    def transfer(amount: int) -> str:
        world.executed.append(f"transfer:{amount}")
        return f"sent {amount}"

    def ship(address: str) -> str:
        """Ship a parcel (done by the warehouse)."""
        raise AssertionError("external tools never run here")

    return Agent[None, str | DeferredToolRequests](
        FunctionModel(respond),
        output_type=[str, DeferredToolRequests],
        tools=[Tool(transfer, requires_approval=True), Tool(ship, external=True)],
        checkpoint_store=store or InMemoryCheckpointStore(),
    )


def ended(agent: Agent[None, str | DeferredToolRequests]) -> tuple[DeferredToolRequests, list[Message]]:
    result = agent.run_sync("pay and ship")
    assert isinstance(result.output, DeferredToolRequests)
    return result.output, result.all_messages()


def ended_run() -> tuple[World, Agent[None, str | DeferredToolRequests], list[Message]]:
    """A fresh world, its agent, and the history of the agent's run that ended on the pause."""
    world = World()
    agent = build(world)
    _, messages = ended(agent)
    return world, agent, messages


def all_decided() -> DeferredToolResults:
    return DeferredToolResults(
        approvals={"big": ToolDenied("too much"), "small": True}, calls={"ext": {"tracking": "T1"}}
    )


def test_a_pause_ends_the_run_with_the_requests_split_by_kind() -> None:
    world = World()
    requests, messages = ended(build(world))
    assert [(p.tool_call_id, p.args) for p in requests.approvals] == [
        ("big", {"amount": 500}),
        ("small", {"amount": 7}),
    ]
    assert [p.tool_call_id for p in requests.calls] == ["ext"]
    assert isinstance(messages[-1], ModelResponse)
    assert world.executed == []  # nothing of the paused response ran


def test_the_continuation_runs_approved_calls_once_and_answers_the_others() -> None:
    world, agent, messages = ended_run()
    result = agent.run_sync(message_history=messages, deferred_tool_results=all_decided())
    assert world.executed == ["transfer:7"]
    assert result.output == repr(
        [
            ("big", "denied", "too much"),
            ("ext", "success", "{'tracking': 'T1'}"),
            ("small", "success", "sent 7"),
        ]
    )
    # A new run, as in PydanticAI: its own usage and new messages (the results request and the answer).
    assert result.usage.requests == 1
    assert [type(m) for m in result.new_messages()] == [ModelRequest, ModelResponse]
    assert result.all_messages()[: len(messages)] == messages


def test_every_pending_call_needs_exactly_one_decision() -> None:
    world, agent, messages = ended_run()
    partial = DeferredToolResults(approvals={"big": True})
    with pytest.raises(DecisionError, match=r"missing decisions for 'small' \(transfer\), 'ext' \(ship\)"):
        agent.run_sync(message_history=messages, deferred_tool_results=partial)
    extra = all_decided()
    extra.approvals["nope"] = True
    with pytest.raises(DecisionError, match="decisions for calls that are not pending: 'nope'"):
        agent.run_sync(message_history=messages, deferred_tool_results=extra)
    twice = all_decided()
    twice.calls["small"] = "done"
    with pytest.raises(DecisionError, match="'small' is in both approvals and calls"):
        agent.run_sync(message_history=messages, deferred_tool_results=twice)
    assert world.executed == []
    # The refused attempts claimed nothing: the pause still continues once.
    agent.run_sync(message_history=messages, deferred_tool_results=all_decided())
    assert world.executed == ["transfer:7"]


def test_decisions_are_validated_against_each_calls_kind() -> None:
    world, agent, messages = ended_run()
    wrong_value = all_decided()
    wrong_value.approvals["small"] = "yes"  # pyright: ignore[reportArgumentType]
    with pytest.raises(DecisionError, match="approval of call 'small' must be True, False, ToolApproved or"):
        agent.run_sync(message_history=messages, deferred_tool_results=wrong_value)
    approved_external = DeferredToolResults(approvals={"big": True, "small": True, "ext": True})
    with pytest.raises(DecisionError, match=r"call 'ext' \(ship\) is external"):
        agent.run_sync(message_history=messages, deferred_tool_results=approved_external)
    result_for_approval = DeferredToolResults(approvals={"big": True}, calls={"small": 1, "ext": 2})
    with pytest.raises(DecisionError, match=r"call 'small' \(transfer\) needs approval"):
        agent.run_sync(message_history=messages, deferred_tool_results=result_for_approval)
    bad_override = all_decided()
    bad_override.approvals["small"] = ToolApproved(override_args={"amount": "lots"})
    with pytest.raises(DecisionError, match="override_args for call 'small' are invalid"):
        agent.run_sync(message_history=messages, deferred_tool_results=bad_override)
    assert world.executed == []


def test_override_args_and_a_model_retry_result() -> None:
    world, agent, messages = ended_run()
    results = DeferredToolResults(
        approvals={"big": ToolApproved(override_args={"amount": 50}), "small": False},
        calls={"ext": ModelRetry("the warehouse is closed")},
    )
    result = agent.run_sync(message_history=messages, deferred_tool_results=results)
    assert world.executed == ["transfer:50"]
    assert result.output == repr(
        [
            ("big", "success", "sent 50"),
            ("ext", "failed", "the warehouse is closed"),
            ("small", "denied", "The tool call was denied."),
        ]
    )


def test_a_pause_continues_once() -> None:
    world, agent, messages = ended_run()
    agent.run_sync(message_history=messages, deferred_tool_results=all_decided())
    with pytest.raises(CheckpointConsumedError, match="was already resumed"):
        agent.run_sync(message_history=messages, deferred_tool_results=all_decided())
    assert world.executed == ["transfer:7"]


def test_a_tampered_history_is_refused_before_anything_runs() -> None:
    world, agent, messages = ended_run()
    last = messages[-1]
    assert isinstance(last, ModelResponse)
    # The approver saw 7; the history now asks for 7000 under the same call ID.
    parts = [
        msgspec.structs.replace(p, args={"amount": 7000}) if p.tool_call_id == "small" else p
        for p in last.parts
        if isinstance(p, ToolCallPart)
    ]
    tampered = [*messages[:-1], msgspec.structs.replace(last, parts=parts)]
    with pytest.raises(PausedStateError, match=r"is not the history run .* paused with"):
        agent.run_sync(message_history=tampered, deferred_tool_results=all_decided())
    earlier = [ModelRequest(parts=[UserPromptPart("something else")]), *messages[1:]]
    with pytest.raises(PausedStateError, match="is not the history run"):
        agent.run_sync(message_history=earlier, deferred_tool_results=all_decided())
    assert world.executed == []
    # The genuine history still continues (the refusals claimed nothing).
    agent.run_sync(message_history=messages, deferred_tool_results=all_decided())
    assert world.executed == ["transfer:7"]


def test_a_history_with_no_pause_in_the_store_is_refused() -> None:
    world = World()
    _, messages = ended(build(world))
    other_process = build(world, InMemoryCheckpointStore())
    with pytest.raises(PausedStateError, match=r"no pause of run .* is in this agent's checkpoint store"):
        other_process.run_sync(message_history=messages, deferred_tool_results=all_decided())
    last = messages[-1]
    assert isinstance(last, ModelResponse)
    anonymous = [*messages[:-1], msgspec.structs.replace(last, run_id=None)]
    with pytest.raises(PausedStateError, match="has no run_id"):
        build(world).run_sync(message_history=anonymous, deferred_tool_results=all_decided())
    with pytest.raises(UserError, match="continues a run that ended with DeferredToolRequests"):
        build(world).run_sync("hi", deferred_tool_results=all_decided())
    assert world.executed == []


def test_a_history_round_tripped_through_json_continues() -> None:
    world = World()
    store = InMemoryCheckpointStore()
    _, messages = ended(build(world, store))
    loaded = history.loads(history.dumps(messages))
    # PydanticAI's JSON (`all_messages_json()`) reads back as the same history too.
    assert history.load_pydantic_ai(history.dump_pydantic_ai(messages)) == messages
    result = build(world, store).run_sync(message_history=loaded, deferred_tool_results=all_decided())
    assert world.executed == ["transfer:7"]
    assert isinstance(result.output, str)


def test_a_prompt_given_with_the_results_follows_them() -> None:
    world, agent, messages = ended_run()
    result = agent.run_sync("and report", message_history=messages, deferred_tool_results=all_decided())
    new = result.new_messages()
    assert isinstance(new[0], ModelRequest)
    assert {type(p) for p in new[0].parts} == {ToolReturnPart}
    assert isinstance(new[1], ModelRequest)
    assert [p.content for p in new[1].parts if isinstance(p, UserPromptPart)] == ["and report"]
    assert world.last_request is new[1]
    with pytest.raises(UserError, match="keeps the instructions the run paused with"):
        agent.run_sync(message_history=messages, deferred_tool_results=all_decided(), instructions="x")


def test_without_deferred_tool_requests_in_the_output_a_pause_still_raises() -> None:
    world = World()
    agent = build(world)
    plain = Agent(agent.model, tools=list(agent.tools.values()), checkpoint_store=InMemoryCheckpointStore())
    with pytest.raises(PauseRequiredError, match="run_until_pause_sync"):
        plain.run_sync("pay and ship")


def test_output_specs_naming_deferred_tool_requests() -> None:
    assert Agent("test", output_type=str | DeferredToolRequests) is not None
    with pytest.raises(OutputSpecError, match="has only DeferredToolRequests"):
        Agent("test", output_type=DeferredToolRequests)
    with pytest.raises(OutputSpecError, match="DeferredToolRequests cannot be tool output"):
        Agent("test", output_type=ToolOutput(DeferredToolRequests))


def test_union_output_with_a_structured_type_and_requests() -> None:
    class Receipt(msgspec.Struct):
        total: int

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"total": 3})])

    agent = Agent[None, Receipt | DeferredToolRequests](
        FunctionModel(respond), output_type=Receipt | DeferredToolRequests
    )
    assert agent.run_sync("go").output == Receipt(total=3)


def test_a_continuation_by_an_agent_whose_called_tools_changed_is_refused() -> None:
    world = World()
    store = InMemoryCheckpointStore()
    original = build(world, store)
    _, messages = ended(original)

    def transfer(amount: int, memo: str) -> str:
        world.executed.append(f"transfer:{amount}:{memo}")
        return "sent"

    tools = original.tools
    changed = Agent[None, str | DeferredToolRequests](
        original.model,
        output_type=[str, DeferredToolRequests],
        tools=[Tool(transfer, requires_approval=True), tools["ship"]],
        checkpoint_store=store,
    )
    with pytest.raises(PausedStateError, match="the tools called by the paused response changed"):
        changed.run_sync(message_history=messages, deferred_tool_results=all_decided())
    assert world.executed == []
