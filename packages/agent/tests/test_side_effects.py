"""Side effects that cannot happen twice (REQUIREMENTS N-01 ... N-07): risk and confirmation on
tools, `guard=` and `confirm=`, action receipts, checkpoint stores, single-use resume (also across
two processes on one SQLite file), catalog binding and the JSONL observer."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from ferrule.agent import ActionReceipt
from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.agent import Approved
from ferrule.agent import CheckpointConsumedError
from ferrule.agent import CheckpointStore
from ferrule.agent import Denied
from ferrule.agent import InMemoryCheckpointStore
from ferrule.agent import JsonlObserver
from ferrule.agent import ModelRetry
from ferrule.agent import Paused
from ferrule.agent import PausedState
from ferrule.agent import PauseRequiredError
from ferrule.agent import RunContext
from ferrule.agent import SqliteCheckpointStore
from ferrule.agent import Tool
from ferrule.agent import ToolReturn
from ferrule.agent.exceptions import CheckpointNotFoundError
from ferrule.agent.exceptions import DecisionError
from ferrule.agent.exceptions import DuplicateToolCallIdError
from ferrule.agent.exceptions import PausedStateEncodeError
from ferrule.agent.exceptions import PausedStateError
from ferrule.agent.exceptions import PausedStateIntegrityError
from ferrule.agent.exceptions import RunTimeoutError
from ferrule.agent.exceptions import ToolDefinitionError
from ferrule.agent.exceptions import run_state_of
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart

pytestmark = pytest.mark.anyio

WORKER = Path(__file__).with_name("checkpoint_race_worker.py")
SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


def calls_then_text(*calls: ToolCallPart, rounds: int = 1) -> FunctionModel:
    """A model that sends `calls` for the first `rounds` prompts-or-results, then a summary of results."""
    seen = {"n": 0}

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen["n"] += 1
        if seen["n"] <= rounds:
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        tool_name=c.tool_name, args=c.args, tool_call_id=f"{c.tool_call_id}{seen['n']}"
                    )
                    for c in calls
                ]
                if rounds > 1
                else list(calls)
            )
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        parts = [p for p in last.parts if isinstance(p, (ToolReturnPart, RetryPromptPart))]
        return ModelResponse(
            parts=[TextPart(" ".join(f"{p.tool_call_id}:{type(p).__name__}" for p in parts))]
        )

    return FunctionModel(respond)


def first_prompt_calls(*calls: ToolCallPart) -> FunctionModel:
    """Calls in answer to the user's prompt, text after any tool results."""

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if isinstance(last.parts[0], UserPromptPart):
            return ModelResponse(parts=list(calls))
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


def call(name: str, call_id: str, **args: Any) -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)


class Ledger:
    """What the tools of one test did."""

    def __init__(self) -> None:
        self.charges: list[int] = []

    def charge(self, cents: int) -> str:
        """Charge the card."""
        self.charges.append(cents)
        return f"charged {cents}"


# --- N-01: risk and confirmation on tools ----------------------------------------------------------


async def test_n01_confirmation_always_behaves_like_requires_approval() -> None:
    ledger = Ledger()
    tool = Tool(ledger.charge, name="charge", risk="high", confirmation="always")
    assert tool.requires_approval is True
    assert tool.definition.kind == "unapproved"
    assert (tool.risk, tool.confirmation, tool.side_effect) == ("high", "always", "non_idempotent")
    agent = Agent(first_prompt_calls(call("charge", "c1", cents=5)), tools=[tool])
    outcome = await agent.run_until_pause("go")
    assert isinstance(outcome, Paused)
    assert [p.tool_call_id for p in outcome.pending] == ["c1"]
    assert ledger.charges == []


async def test_n01_confirmation_risk_asks_only_for_high_risk_tools() -> None:
    ledger = Ledger()
    high = Tool(ledger.charge, name="charge", risk="high", confirmation="risk")
    medium = Tool(ledger.charge, name="charge_small", risk="medium", confirmation="risk")
    assert high.requires_approval is True
    assert medium.requires_approval is False
    agent = Agent(first_prompt_calls(call("charge_small", "s1", cents=1)), tools=[high, medium])
    result = await agent.run("go")
    assert ledger.charges == [1]
    assert [(a.tool_name, a.status, a.risk) for a in result.actions] == [
        ("charge_small", "succeeded", "medium")
    ]


def test_n01_unknown_risk_and_confirmation_values_are_refused() -> None:
    def noop() -> None:
        """Nothing."""

    with pytest.raises(ToolDefinitionError, match="risk must be 'low', 'medium' or 'high'"):
        Tool(noop, risk="severe")  # pyright: ignore[reportArgumentType]
    with pytest.raises(ToolDefinitionError, match="confirmation must be 'never', 'always' or 'risk'"):
        Tool(noop, confirmation="sometimes")  # pyright: ignore[reportArgumentType]
    assert Tool(noop).risk == "low"
    assert Tool(noop).confirmation == "never"
    assert Tool(noop, risk="high").replace(name="other").risk == "high"


# --- N-02: guard= and confirm= ---------------------------------------------------------------------


async def test_n02_guard_denial_is_recorded_and_not_a_retry() -> None:
    ledger = Ledger()
    seen: list[tuple[str, str, int]] = []

    def guard(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> bool:
        seen.append((tool.name, ctx.tool_call_id or "", args.cents))
        return args.cents < 100

    agent = Agent(
        first_prompt_calls(call("charge", "big", cents=500), call("charge", "small", cents=5)),
        tools=[Tool(ledger.charge, name="charge")],
        guard=guard,
    )
    result = await agent.run("go")
    assert seen == [("charge", "big", 500), ("charge", "small", 5)]  # validated args, per call
    assert ledger.charges == [5]
    denied = result.new_messages()[2]
    assert isinstance(denied, ModelRequest)
    first = denied.parts[0]
    assert isinstance(first, ToolReturnPart)
    assert first.outcome == "denied"
    assert "not authorized" in str(first.content)
    assert [(a.tool_call_id, a.status) for a in result.actions] == [("big", "denied"), ("small", "succeeded")]


async def test_n02_guard_may_deny_with_a_message_or_ask_for_a_retry() -> None:
    ledger = Ledger()

    async def guard(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> Denied | None:
        if args.cents == 13:
            raise ModelRetry("choose another amount")
        return Denied(message="over the limit") if args.cents > 100 else None

    agent = Agent(
        first_prompt_calls(call("charge", "a", cents=500), call("charge", "b", cents=13)),
        tools=[Tool(ledger.charge, name="charge")],
        guard=guard,
    )
    result = await agent.run("go")
    results = result.new_messages()[2]
    assert isinstance(results, ModelRequest)
    a, b = results.parts[:2]
    assert isinstance(a, ToolReturnPart)
    assert a.outcome == "denied"
    assert a.content == "over the limit"
    assert isinstance(b, RetryPromptPart)
    assert b.content == "choose another amount"
    assert ledger.charges == []
    assert [(r.tool_call_id, r.status) for r in result.actions] == [("a", "denied"), ("b", "failed")]


async def test_n02_confirm_callback_decides_instead_of_pausing() -> None:
    ledger = Ledger()
    asked: list[tuple[str, int]] = []

    def confirm(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> bool:  # sync: runs in a worker thread
        asked.append((tool.name, args.cents))
        return args.cents < 100

    tool = Tool(ledger.charge, name="charge", risk="high", confirmation="always")
    model = first_prompt_calls(call("charge", "big", cents=500), call("charge", "small", cents=5))
    result = await Agent(model, tools=[tool], confirm=confirm).run("go")  # run(): no pause needed
    assert asked == [("charge", 500), ("charge", 5)]
    assert ledger.charges == [5]
    assert [(r.tool_call_id, r.status, r.risk) for r in result.actions] == [
        ("big", "denied", "high"),
        ("small", "succeeded", "high"),
    ]
    # Without confirm= the same call pauses exactly as before; run() refuses to drop the pause.
    with pytest.raises(PauseRequiredError) as caught:
        await Agent(model, tools=[tool]).run("go")
    assert [(r.tool_call_id, r.status) for r in caught.value.paused.actions] == [
        ("big", "confirmation_required"),
        ("small", "confirmation_required"),
    ]
    assert ledger.charges == [5]


async def test_n02_confirm_is_asked_only_about_the_calls_that_wait_even_when_ids_repeat() -> None:
    # A response decided by confirm= never pauses, so two calls may share an ID here: the call that
    # needs no confirmation must neither be asked about nor get the other call's decision.
    ledger = Ledger()
    notes: list[str] = []
    asked: list[tuple[str, Any]] = []

    def note(text: str) -> str:
        """Write a note."""
        notes.append(text)
        return "noted"

    def confirm(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> bool:
        asked.append((tool.name, ctx.tool_call_id))
        return False

    charge = Tool(ledger.charge, name="charge", confirmation="always")
    model = first_prompt_calls(call("note", "dup", text="hi"), call("charge", "dup", cents=500))
    result = await Agent(model, tools=[Tool(note), charge], confirm=confirm).run("go")
    assert asked == [("charge", "dup")]
    assert notes == ["hi"]
    assert ledger.charges == []
    results = result.new_messages()[2]
    assert isinstance(results, ModelRequest)
    assert [(p.tool_name, p.outcome) for p in results.parts if isinstance(p, ToolReturnPart)] == [
        ("note", "success"),
        ("charge", "denied"),
    ]

    # One tool, one ID, approval depending on the arguments: only the big charge is asked about.
    def big(ctx: RunContext[Any], args: Any) -> bool:
        return args.cents > 100

    asked.clear()
    by_amount = Tool(ledger.charge, name="charge", requires_approval=big)
    model = first_prompt_calls(call("charge", "dup", cents=5), call("charge", "dup", cents=500))
    await Agent(model, tools=[by_amount], confirm=confirm).run("go")
    assert asked == [("charge", "dup")]
    assert ledger.charges == [5]


async def test_n02_confirm_may_override_arguments_and_is_not_asked_with_external_calls() -> None:
    ledger = Ledger()

    async def confirm(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> Approved:
        return Approved(override_args={"cents": 1})

    tool = Tool(ledger.charge, name="charge", confirmation="always")
    result = await Agent(
        first_prompt_calls(call("charge", "c", cents=900)), tools=[tool], confirm=confirm
    ).run("go")
    assert isinstance(result, AgentRunResult)
    assert ledger.charges == [1]

    ship = Tool.external_tool("ship", parameters_json_schema={"type": "object", "properties": {}})
    agent = Agent(
        first_prompt_calls(call("charge", "c", cents=9), call("ship", "e")),
        tools=[tool, ship],
        confirm=confirm,
    )
    outcome = await agent.run_until_pause("go")
    assert isinstance(outcome, Paused)  # an external result must come from the application: all pause
    assert sorted(p.tool_call_id for p in outcome.pending) == ["c", "e"]
    assert ledger.charges == [1]


async def test_n02_guard_runs_again_when_a_paused_run_resumes() -> None:
    ledger = Ledger()
    allowed = {"charge": True}

    def guard(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> bool:
        return allowed[tool.name]

    tool = Tool(ledger.charge, name="charge", confirmation="always")
    agent = Agent(first_prompt_calls(call("charge", "c", cents=9)), tools=[tool], guard=guard)
    outcome = await agent.run_until_pause("go")
    assert isinstance(outcome, Paused)
    allowed["charge"] = False  # authorization was revoked while the approval waited
    result = await agent.resume(outcome, {"c": Approved()})
    assert isinstance(result, AgentRunResult)
    assert ledger.charges == []
    assert [(r.tool_call_id, r.status) for r in result.actions] == [("c", "denied")]


# --- N-03: action receipts -------------------------------------------------------------------------


async def test_n03_every_call_that_is_not_read_only_gets_a_receipt() -> None:
    def lookup(q: str) -> str:
        """Read."""
        return q

    def put(key: str) -> str:
        """An idempotent write."""
        return key

    def flaky(n: int) -> str:
        """Fails."""
        raise ModelRetry(f"backend refused with Bearer {SECRET}")

    async def slow(n: int) -> str:
        """Hangs."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    model = first_prompt_calls(
        call("lookup", "r", q="x"), call("put", "p", key="k"), call("flaky", "f", n=1), call("slow", "s", n=1)
    )
    agent = Agent(
        model,
        tools=[
            Tool(lookup, side_effect="read_only"),
            Tool(put, side_effect="idempotent", risk="medium"),
            Tool(flaky, risk="medium"),
            Tool(slow, timeout=0.05, risk="high"),
        ],
        retries=3,
    )
    result = await agent.run("go")
    actions = result.actions
    assert [(a.tool_call_id, a.tool_name, a.status, a.side_effect, a.risk) for a in actions] == [
        ("p", "put", "succeeded", "idempotent", "medium"),
        ("f", "flaky", "failed", "non_idempotent", "medium"),
        ("s", "slow", "unknown", "non_idempotent", "high"),
    ]
    assert all(isinstance(a, ActionReceipt) and a.step_id is None for a in actions)
    detail = actions[1].detail or ""
    assert "backend refused" in detail
    assert SECRET not in detail
    # `unknown_outcomes` is the unknown subset of the receipts; an unknown call is never retried.
    assert [c.tool_call_id for c in result.unknown_outcomes] == [
        a.tool_call_id for a in actions if a.status == "unknown"
    ]
    assert sum(1 for m in result.new_messages() if isinstance(m, ModelResponse)) == 2


async def test_n03_paused_actions_list_what_ran_and_what_waits() -> None:
    ledger = Ledger()

    def note(text: str) -> str:
        """Write a note."""
        return text

    tool = Tool(ledger.charge, name="charge", confirmation="always", risk="high")
    agent = Agent(
        first_prompt_calls(call("note", "n", text="hi"), call("charge", "c", cents=3)),
        tools=[Tool(note), tool],
    )
    outcome = await agent.run_until_pause("go")
    assert isinstance(outcome, Paused)
    assert [(a.tool_call_id, a.status, a.risk) for a in outcome.actions] == [
        ("c", "confirmation_required", "high")
    ]
    result = await agent.resume(outcome, {"c": Approved()})
    assert isinstance(result, AgentRunResult)
    assert [(a.tool_call_id, a.status) for a in result.actions] == [("n", "succeeded"), ("c", "succeeded")]


# --- N-04 / N-05: checkpoint stores and single-use resume -----------------------------------------


def charging_agent(ledger: Ledger, store: CheckpointStore | None = None, **options: Any) -> Agent[None, str]:
    tool = Tool(ledger.charge, name="charge", confirmation="always", risk="high")
    return Agent(
        first_prompt_calls(call("charge", "c1", cents=500)), tools=[tool], checkpoint_store=store, **options
    )


async def test_n05_resuming_the_same_paused_state_twice_runs_nothing_the_second_time() -> None:
    ledger = Ledger()
    agent = charging_agent(ledger)  # the process-wide default store
    outcome = await agent.run_until_pause("go")
    assert isinstance(outcome, Paused)
    data = outcome.to_json()
    first = await agent.resume(outcome, {"c1": Approved()})
    assert isinstance(first, AgentRunResult)
    assert ledger.charges == [500]
    for again in (outcome, outcome.state, data):  # the same pause, however it is passed
        with pytest.raises(CheckpointConsumedError, match="already resumed"):
            await agent.resume(again, {"c1": Approved()})
    # Without a store of its own, state_id de-duplication spans agents of this process.
    with pytest.raises(CheckpointConsumedError):
        await charging_agent(ledger).resume(data, {"c1": Approved()})
    assert ledger.charges == [500]


async def test_n04_resume_by_run_id_loads_from_the_store_and_claims_it_once() -> None:
    ledger = Ledger()
    store = InMemoryCheckpointStore()
    assert isinstance(store, CheckpointStore)
    outcome = await charging_agent(ledger, store).run_until_pause("go")
    assert isinstance(outcome, Paused)
    run_id = outcome.state.run_id
    loaded = await store.load(run_id)
    assert loaded.state_id == outcome.state.state_id
    # A fresh agent (as another worker would build it) resumes from the store by run ID alone.
    result = await charging_agent(ledger, store).resume(run_id=run_id, decisions={"c1": Approved()})
    assert isinstance(result, AgentRunResult)
    assert result.output == "done"
    assert ledger.charges == [500]
    with pytest.raises(CheckpointConsumedError):
        await charging_agent(ledger, store).resume(run_id=run_id, decisions={"c1": Approved()})
    with pytest.raises(CheckpointConsumedError):
        await store.load(run_id)
    with pytest.raises(CheckpointNotFoundError, match="no paused state for run 'nope'"):
        await charging_agent(ledger, store).resume(run_id="nope", decisions={})
    assert ledger.charges == [500]


async def test_n04_in_memory_store_is_isolated_from_the_callers_messages() -> None:
    """Editing the paused history in place after the pause changes nothing a resume by run ID sees."""
    ledger = Ledger()
    store = InMemoryCheckpointStore()

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if isinstance(last.parts[0], UserPromptPart):
            return ModelResponse(parts=[call("charge", "c1", cents=500)])  # fresh parts every run
        return ModelResponse(parts=[TextPart("done")])

    tool = Tool(ledger.charge, name="charge", confirmation="always", risk="high")
    agent = Agent(FunctionModel(respond), tools=[tool], checkpoint_store=store)
    outcome = await agent.run_until_pause("go")
    assert isinstance(outcome, Paused)
    # The caller edits its copy of the history in place: the pending call and the user's prompt.
    paused_call = outcome.state.messages[-1].parts[0]
    assert isinstance(paused_call, ToolCallPart)
    assert isinstance(paused_call.args, dict)
    paused_call.args["cents"] = 1  # inside the call's arguments
    prompt = outcome.state.messages[0].parts[-1]
    assert isinstance(prompt, UserPromptPart)
    prompt.content = "edited"
    loaded = await store.load(outcome.state.run_id)
    loaded.messages.clear()  # nor does editing what `load` returned
    result = await agent.resume(run_id=outcome.state.run_id, decisions={"c1": Approved()})
    assert isinstance(result, AgentRunResult)
    assert ledger.charges == [500], "the resumed run charged what the model asked for at the pause"
    history = result.all_messages()
    first_prompt = history[0].parts[-1]
    assert isinstance(first_prompt, UserPromptPart)
    assert first_prompt.content == "go"
    resumed_call = history[1].parts[0]
    assert isinstance(resumed_call, ToolCallPart)
    assert resumed_call.args == {"cents": 500}


class Receipt:
    """An application object: JSON cannot hold it."""

    def __init__(self, number: int) -> None:
        self.number = number


def noting_agent(ledger: Ledger, store: CheckpointStore, metadata: Any) -> Agent[None, str]:
    """A note (whose result carries `metadata`), then a charge that waits for approval."""

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn == 0:
            return ModelResponse(parts=[call("note", "n1", text="hi")])
        if turn == 1:
            return ModelResponse(parts=[call("charge", "c1", cents=5)])
        return ModelResponse(parts=[TextPart("done")])

    def note(text: str) -> ToolReturn:
        """Write a note."""
        return ToolReturn(text, metadata=metadata)

    tools = [Tool(note), Tool(ledger.charge, name="charge", confirmation="always")]
    return Agent(FunctionModel(respond), tools=tools, checkpoint_store=store)


async def test_n04_in_memory_store_keeps_application_metadata_as_it_is() -> None:
    """A tool's metadata that JSON cannot hold (an application object) pauses and resumes unchanged."""
    ledger = Ledger()
    receipt = Receipt(7)
    agent = noting_agent(ledger, InMemoryCheckpointStore(), receipt)
    outcome = await agent.run_until_pause("go")
    assert isinstance(outcome, Paused)
    result = await agent.resume(run_id=outcome.state.run_id, decisions={"c1": Approved()})
    assert isinstance(result, AgentRunResult)
    assert ledger.charges == [5]
    noted = result.all_messages()[2].parts[0]
    assert isinstance(noted, ToolReturnPart)
    assert noted.metadata is receipt


async def assert_nothing_saved(store: CheckpointStore, error: BaseException) -> None:
    """The run that `error` ended saved no checkpoint to `store`."""
    state = run_state_of(error)
    assert state is not None
    with pytest.raises(CheckpointNotFoundError):
        await store.load(state.messages[0].run_id or "")


async def test_n04_sqlite_store_refuses_metadata_json_cannot_hold_and_says_where(tmp_path: Path) -> None:
    ledger = Ledger()
    store = SqliteCheckpointStore(tmp_path / "checkpoints.sqlite")
    agent = noting_agent(ledger, store, {"receipt": Receipt(7)})
    with pytest.raises(PausedStateEncodeError) as caught:
        await agent.run_until_pause("go")
    message = str(caught.value)
    assert "tool 'note', call ID 'n1'" in message
    assert "messages[2].parts[0].metadata['receipt']" in message
    assert "Receipt" in message
    assert "InMemoryCheckpointStore" in message
    assert isinstance(caught.value.__cause__, TypeError)
    assert ledger.charges == []
    await assert_nothing_saved(store, caught.value)


async def test_n04_to_json_of_a_state_with_application_metadata_says_where() -> None:
    outcome = await noting_agent(Ledger(), InMemoryCheckpointStore(), Receipt(7)).run_until_pause("go")
    assert isinstance(outcome, Paused)
    with pytest.raises(PausedStateEncodeError, match=r"messages\[2\]\.parts\[0\]\.metadata is a Receipt"):
        outcome.to_json()


async def test_n04_a_pause_refuses_two_calls_with_one_id() -> None:
    ledger = Ledger()
    store = InMemoryCheckpointStore()
    model = first_prompt_calls(call("charge", "c1", cents=500), call("charge", "c1", cents=5))
    agent = Agent(
        model, tools=[Tool(ledger.charge, name="charge", confirmation="always")], checkpoint_store=store
    )
    with pytest.raises(DuplicateToolCallIdError, match=r"'c1' \(charge\).*unique ID") as caught:
        await agent.run_until_pause("go")
    assert caught.value.tool_call_id == "c1"
    assert ledger.charges == []
    await assert_nothing_saved(store, caught.value)


async def test_n04_a_pause_refuses_a_pending_and_an_immediate_call_with_one_id() -> None:
    ledger = Ledger()
    looked: list[str] = []

    def lookup(q: str) -> str:
        """Look something up."""
        looked.append(q)
        return "x"

    model = first_prompt_calls(call("lookup", "same", q="a"), call("charge", "same", cents=5))
    tools = [Tool(lookup), Tool(ledger.charge, name="charge", confirmation="always")]
    with pytest.raises(DuplicateToolCallIdError, match=r"'same' \(charge, lookup\)"):
        await Agent(model, tools=tools).run_until_pause("go")
    assert (looked, ledger.charges) == ([], [])


async def test_n04_two_calls_with_one_id_outside_a_pause_both_run() -> None:
    ledger = Ledger()
    model = first_prompt_calls(call("charge", "c1", cents=1), call("charge", "c1", cents=2))
    result = await Agent(model, tools=[Tool(ledger.charge, name="charge")]).run("go")
    assert result.output == "done"
    assert sorted(ledger.charges) == [1, 2]  # concurrent calls: any order


async def test_n04_resume_refuses_a_state_whose_response_holds_two_calls_with_one_id() -> None:
    ledger = Ledger()
    agent = charging_agent(ledger)
    outcome = await agent.run_until_pause("go")
    assert isinstance(outcome, Paused)
    # A hand-built state: a second call with the paused call's ID, not listed anywhere.
    last = outcome.state.messages[-1]
    assert isinstance(last, ModelResponse)
    outcome.state.messages[-1] = ModelResponse(parts=[*last.parts, call("charge", "c1", cents=9)])
    with pytest.raises(DuplicateToolCallIdError, match="'c1'"):
        await agent.resume(outcome, {"c1": Approved()})
    assert ledger.charges == []


async def test_n05_wrong_decisions_do_not_use_up_the_checkpoint() -> None:
    ledger = Ledger()
    store = InMemoryCheckpointStore()
    agent = charging_agent(ledger, store)
    outcome = await agent.run_until_pause("go")
    assert isinstance(outcome, Paused)
    with pytest.raises(DecisionError):
        await agent.resume(run_id=outcome.state.run_id, decisions={"other": Approved()})
    result = await agent.resume(run_id=outcome.state.run_id, decisions={"c1": Approved()})
    assert isinstance(result, AgentRunResult)
    assert ledger.charges == [500]


async def test_n05_a_resumed_run_that_pauses_again_gets_a_new_checkpoint() -> None:
    ledger = Ledger()
    store = InMemoryCheckpointStore()
    tool = Tool(ledger.charge, name="charge", confirmation="always")
    agent = Agent(
        calls_then_text(call("charge", "c", cents=7), rounds=2), tools=[tool], checkpoint_store=store
    )
    first = await agent.run_until_pause("go")
    assert isinstance(first, Paused)
    second = await agent.resume(run_id=first.state.run_id, decisions={"c1": Approved()})
    assert isinstance(second, Paused)  # the model asked for another charge
    assert second.state.run_id == first.state.run_id
    assert second.state.state_id != first.state.state_id
    # The old approval is stale: pinned to its state it is refused, replaying it is refused too.
    with pytest.raises(CheckpointConsumedError, match="superseded"):
        await agent.resume(
            run_id=first.state.run_id, state_id=first.state.state_id, decisions={"c1": Approved()}
        )
    with pytest.raises(CheckpointConsumedError):
        await agent.resume(first, {"c1": Approved()})
    assert ledger.charges == [7]
    done = await agent.resume(
        run_id=first.state.run_id, state_id=second.state.state_id, decisions={"c2": Approved()}
    )
    assert isinstance(done, AgentRunResult)
    assert ledger.charges == [7, 7]


def test_sqlite_store_refuses_a_key_that_is_not_bytes_when_built(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    with pytest.raises(UserError, match=r"integrity_key must be bytes, got str .*key\.encode\(\)") as raised:
        SqliteCheckpointStore(db, integrity_key="k1-secret")  # pyright: ignore[reportArgumentType]
    assert "k1-secret" not in str(raised.value)
    assert not db.exists()  # refused before anything was opened


async def test_n04_sqlite_store_keeps_signed_states_in_a_file(tmp_path: Path) -> None:
    ledger = Ledger()
    db = tmp_path / "checkpoints.sqlite"
    store = SqliteCheckpointStore(db, integrity_key=b"k1")
    outcome = await charging_agent(ledger, store).run_until_pause("go")
    assert isinstance(outcome, Paused)
    run_id = outcome.state.run_id
    # Another store object on the same file (another process would open it the same way).
    reopened = SqliteCheckpointStore(db, integrity_key=b"k1")
    loaded = await reopened.load(run_id)
    assert isinstance(loaded, PausedState)
    assert loaded.state_id == outcome.state.state_id
    assert loaded.messages == outcome.state.messages
    with pytest.raises(PausedStateIntegrityError):
        await SqliteCheckpointStore(db, integrity_key=b"other").load(run_id)
    result = await charging_agent(ledger, reopened).resume(run_id=run_id, decisions={"c1": Approved()})
    assert isinstance(result, AgentRunResult)
    assert ledger.charges == [500]
    with pytest.raises(CheckpointConsumedError):
        await store.load(run_id)
    with pytest.raises(CheckpointConsumedError):
        await store.save(run_id, outcome.state)  # a used state cannot be put back
    with pytest.raises(CheckpointConsumedError):
        await charging_agent(ledger, store).resume(outcome, {"c1": Approved()})
    assert ledger.charges == [500]


async def test_n04_in_memory_store_is_bounded() -> None:
    store = InMemoryCheckpointStore(max_checkpoints=2)
    ledger = Ledger()
    agent = charging_agent(ledger, store)
    pauses = [await agent.run_until_pause("go") for _ in range(3)]
    run_ids = [p.state.run_id for p in pauses if isinstance(p, Paused)]
    with pytest.raises(CheckpointNotFoundError):
        await store.load(run_ids[0])  # the oldest was dropped
    assert (await store.load(run_ids[2])).run_id == run_ids[2]
    with pytest.raises(ValueError, match="max_checkpoints"):
        InMemoryCheckpointStore(max_checkpoints=0)


def test_n05_two_processes_racing_to_resume_one_run_exactly_one_wins(tmp_path: Path) -> None:
    db, effects, go = str(tmp_path / "race.sqlite"), str(tmp_path / "effects.txt"), str(tmp_path / "go")
    paused = subprocess.run(
        [sys.executable, str(WORKER), "pause", db, effects],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    run_id = paused.stdout.strip()
    racers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "resume", db, effects, run_id, go],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    Path(go).touch()
    outputs = [r.communicate(timeout=120) for r in racers]
    assert [r.returncode for r in racers] == [0, 0], [err for _, err in outputs]
    assert sorted(out.strip() for out, _ in outputs) == ["consumed", "won"]
    lines = Path(effects).read_text().splitlines()
    assert len(lines) == 1
    assert lines[0].endswith(" 500")
    assert int(lines[0].split()[0]) in {r.pid for r in racers}


# --- N-06: checkpoint binding ----------------------------------------------------------------------


async def test_n06_catalog_binding_refuses_a_changed_catalog() -> None:
    def extra() -> str:
        """Another tool."""
        return ""

    for binding, refused in (("called_tools", False), ("catalog", True)):
        ledger = Ledger()
        outcome = await charging_agent(ledger, checkpoint_binding=binding).run_until_pause("go")
        assert isinstance(outcome, Paused)
        assert (outcome.state.catalog_fingerprint is not None) is refused
        data = outcome.to_json()  # the binding travels with the state
        changed = charging_agent(ledger)
        changed.add_tool(Tool(extra))
        if refused:
            with pytest.raises(PausedStateError, match="tool catalog changed"):
                await changed.resume(data, {"c1": Approved()})
            assert ledger.charges == []
        else:
            await changed.resume(data, {"c1": Approved()})
            assert ledger.charges == [500]


# --- N-07: JSONL observer --------------------------------------------------------------------------


async def test_n07_jsonl_observer_writes_events_without_content_by_default() -> None:
    def lookup(q: str) -> str:
        """Read."""
        return f"secret data for {q}"

    for details in (False, True):
        out = io.StringIO()
        observer = JsonlObserver(out, details=details)
        agent = Agent(
            first_prompt_calls(call("lookup", "l", q=f"token {SECRET}")),
            tools=[Tool(lookup)],
            hooks=[observer],
        )
        await agent.run("tell me", event_handler=observer.on_event)
        text = out.getvalue()
        lines = [json.loads(line) for line in text.splitlines()]
        kinds = [line["event"] for line in lines]
        for kind in ("run_start", "model_request_start", "tool_execute_start", "tool_execute_end", "run_end"):
            assert kind in kinds
        assert "function_tool_call" in kinds
        assert "part_delta" not in kinds
        started = next(line for line in lines if line["event"] == "function_tool_call")
        assert (started["tool_name"], started["tool_call_id"]) == ("lookup", "l")
        end = next(line for line in lines if line["event"] == "tool_execute_end")
        assert (end["tool"], end["tool_call_id"], end["outcome"]) == ("lookup", "l", "success")
        assert SECRET not in text  # redacted always, details or not
        assert ("secret data for" in text) is details  # content only with details=True


async def test_n03_paused_actions_include_calls_the_guard_denied() -> None:
    ledger = Ledger()

    def guard(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> Denied | None:
        return Denied(message=f"no, token {SECRET}") if args.cents > 100 else None

    tool = Tool(ledger.charge, name="charge", confirmation="always")
    model = first_prompt_calls(call("charge", "big", cents=900), call("charge", "small", cents=9))
    outcome = await Agent(model, tools=[tool], guard=guard).run_until_pause("go")
    assert isinstance(outcome, Paused)
    assert [p.tool_call_id for p in outcome.pending] == ["small"]  # a denied call asks nobody
    assert [(a.tool_call_id, a.status) for a in outcome.actions] == [
        ("big", "denied"),
        ("small", "confirmation_required"),
    ]
    assert SECRET not in (outcome.actions[0].detail or "")


async def test_n03_a_failed_run_keeps_its_receipts_unknown_outcomes_included() -> None:
    async def transfer(cents: int) -> str:
        """Move money; hangs past the run deadline."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    def note(text: str) -> str:
        """Write a note."""
        return text

    model = first_prompt_calls(call("note", "n", text="x"), call("transfer", "t", cents=5))
    agent = Agent(model, tools=[Tool(note, side_effect="idempotent"), Tool(transfer, risk="high")])
    with pytest.raises(RunTimeoutError) as caught:
        await agent.run("go", timeout=0.2)
    state = run_state_of(caught.value)
    assert state is not None
    assert [(a.tool_call_id, a.status, a.risk) for a in state.actions] == [
        ("n", "succeeded", "low"),
        ("t", "unknown", "high"),
    ]
    assert [c.tool_call_id for c in state.unknown_outcomes] == ["t"]
