"""Execution (M-09 ... M-11): parallel batches, skipped branches, bindings, replanning, unknown
outcomes, confirmation, agentic steps."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

import ferrule.agent
from ferrule.agent import ModelRetry
from ferrule.agent import Tool
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.planning import ActionReceipt
from ferrule.planning import BatchStartEvent
from ferrule.planning import ConfirmationRequest
from ferrule.planning import PlanBudget
from ferrule.planning import PlanError
from ferrule.planning import PlanningAgent
from ferrule.planning import PlanStepError
from ferrule.planning import ReplanEvent
from ferrule.planning import StepFailedEvent
from ferrule.planning import StepSkippedEvent

from .conftest import Recorder
from .conftest import Script
from .conftest import pay_plan
from .conftest import pay_tools
from .conftest import plan
from .conftest import step

pytestmark = pytest.mark.anyio


async def collect(agent: PlanningAgent, prompt: str = "go", **options: Any) -> tuple[Any, list[Any]]:
    events: list[Any] = []

    async def handler(event: Any) -> None:
        events.append(event)

    return await agent.run(prompt, event_handler=handler, **options), events


def batches(events: list[Any]) -> list[tuple[str, ...]]:
    return [e.step_ids for e in events if isinstance(e, BatchStartEvent)]


# --- M-09: batches, conditions, bindings ------------------------------------------------------------


async def test_independent_steps_run_together_in_one_batch() -> None:
    started = {"a": anyio.Event(), "b": anyio.Event()}

    def waiting(name: str, other: str) -> Tool[Any]:
        async def function(args: dict[str, Any]) -> str:
            started[name].set()
            with anyio.fail_after(5):  # a deadlock guard: the other step must be running now
                await started[other].wait()
            return name

        return Tool.from_schema(
            function,
            name=name,
            parameters_json_schema={"type": "object", "properties": {}},
            takes_ctx=False,
            side_effect="read_only",
        )

    tools = Recorder()
    script = Script(
        [
            plan(
                {"id": "a", "capability": "a"},
                {"id": "b", "capability": "b"},
                step("c", depends_on=["a", "b"]),
            )
        ]
    )
    agent = PlanningAgent(
        script.model(), tools=[waiting("a", "b"), waiting("b", "a"), tools.tool("lookup", 1)]
    )
    result, events = await collect(agent)
    assert batches(events) == [("a", "b"), ("c",)]
    assert result.stats.batches == 2
    assert [e.step_id for e in result.evidence] in (["a", "b", "c"], ["b", "a", "c"])


async def test_batches_are_bounded_by_max_parallel_steps() -> None:
    tools = Recorder()
    doc = plan(*[step(f"s{i}") for i in range(5)], step("last", depends_on=["s0", "s4"]))
    for limit, expected in (
        (5, [("s0", "s1", "s2", "s3", "s4"), ("last",)]),
        (4, [("s0", "s1", "s2", "s3"), ("s4",), ("last",)]),
        (1, [("s0",), ("s1",), ("s2",), ("s3",), ("s4",), ("last",)]),
    ):
        agent = PlanningAgent(
            Script([doc]).model(),
            tools=[tools.tool("lookup", 1)],
            budget=PlanBudget(max_parallel_steps=limit),
        )
        _, events = await collect(agent)
        assert batches(events) == expected


async def test_a_false_condition_skips_the_step_and_never_calls_its_tool() -> None:
    tools = Recorder()
    doc = plan(
        step("weather", "weather"),
        step(
            "outdoor",
            "outdoor",
            depends_on=["weather"],
            condition={"source_step": "weather", "source_path": "/sunny", "equals": True},
        ),
        step(
            "indoor",
            "indoor",
            depends_on=["weather"],
            condition={"source_step": "weather", "source_path": "/sunny", "equals": False},
        ),
        # Reads the skipped branch: skipped too. Only depends on both: runs.
        step(
            "photos",
            "outdoor",
            depends_on=["outdoor"],
            bindings=[{"source_step": "outdoor", "source_path": "/city", "target_path": "/city"}],
        ),
        step("compose", "lookup", depends_on=["outdoor", "indoor"]),
    )
    agent = PlanningAgent(
        Script([doc]).model(),
        tools=[
            tools.tool("weather", {"sunny": False}),
            tools.tool("outdoor", {"city": "Paris"}),
            tools.tool("indoor", {"museum": "Orsay"}),
            tools.tool("lookup", "ok"),
        ],
    )
    result, events = await collect(agent)
    assert tools.names() == ["weather", "indoor", "lookup"]
    skipped = {e.step_id: e.reason for e in events if isinstance(e, StepSkippedEvent)}
    assert skipped == {
        "outdoor": "condition false: /sunny of 'weather' is false, not true",
        "photos": "its binding reads step 'outdoor', which was skipped",
    }
    assert result.report.steps["outdoor"].status == "skipped"
    assert result.stats.skipped == 2
    assert [(w.kind, w.step_id) for w in result.warnings] == [
        ("step_skipped", "outdoor"),
        ("step_skipped", "photos"),
    ]


async def test_a_condition_on_a_missing_value_skips_with_the_reason() -> None:
    tools = Recorder()
    doc = plan(
        step("a"),
        step("b", depends_on=["a"], condition={"source_step": "a", "source_path": "/flags/0", "equals": 1}),
    )
    agent = PlanningAgent(Script([doc]).model(), tools=[tools.tool("lookup", {"flags": []})])
    _, events = await collect(agent)
    reasons = [e.reason for e in events if isinstance(e, StepSkippedEvent)]
    assert reasons == [
        "its condition could not be read (/flags/0 of 'a': index 0 is past the end of an array of 0)"
    ]
    assert tools.names() == ["lookup"]


async def test_bindings_copy_evidence_into_the_input_before_validation() -> None:
    tools = Recorder()
    doc = plan(
        step("weather", "weather", input={"city": "Shenzhen"}),
        step(
            "plan",
            "outdoor",
            input={"city": "Shenzhen", "extra": {"note": "keep"}},
            depends_on=["weather"],
            bindings=[
                {
                    "source_step": "weather",
                    "source_path": "/reading/temperature",
                    "target_path": "/temperature",
                },
                {"source_step": "weather", "source_path": "/tags/1", "target_path": "/extra/tag"},
            ],
        ),
    )
    agent = PlanningAgent(
        Script([doc]).model(),
        tools=[
            tools.tool("weather", {"reading": {"temperature": 27}, "tags": ["hot", "dry"]}),
            tools.tool(
                "outdoor",
                "walk",
                params={
                    "city": {"type": "string"},
                    "temperature": {"type": "integer"},
                    "extra": {"type": "object"},
                },
            ),
        ],
    )
    result, _ = await collect(agent)
    assert tools.calls[1] == (
        "outdoor",
        {"city": "Shenzhen", "extra": {"note": "keep", "tag": "dry"}, "temperature": 27},
    )
    assert result.report.steps["plan"].input == tools.calls[1][1]
    assert result.evidence_of("weather").get("/reading/temperature") == 27


async def test_a_bound_input_that_does_not_fit_the_tool_fails_the_step_without_calling_it() -> None:
    tools = Recorder()
    doc = plan(
        step("weather", "weather"),
        step(
            "outdoor",
            "outdoor",
            depends_on=["weather"],
            bindings=[
                {"source_step": "weather", "source_path": "/temperature", "target_path": "/temperature"}
            ],
        ),
    )
    script = Script(
        [doc],
        patches=[{"replace": ["outdoor"], "steps": [step("outdoor", "lookup", depends_on=["weather"])]}],
    )
    agent = PlanningAgent(
        script.model(),
        tools=[
            tools.tool("weather", {"temperature": "warm"}),
            tools.tool(
                "outdoor", "walk", params={"city": {"type": "string"}, "temperature": {"type": "integer"}}
            ),
            tools.tool("lookup", "ok"),
        ],
    )
    result, events = await collect(agent)
    failed = [e for e in events if isinstance(e, StepFailedEvent)]
    assert [(e.step_id, e.status) for e in failed] == [("outdoor", "failed")]
    assert "the bound input does not fit tool 'outdoor'" in failed[0].error
    assert tools.names() == ["weather", "lookup"]
    assert result.stats.replans == 1


async def test_a_binding_whose_source_value_is_missing_fails_the_step() -> None:
    tools = Recorder()
    doc = plan(
        step("a"),
        step(
            "b",
            depends_on=["a"],
            bindings=[{"source_step": "a", "source_path": "/nope", "target_path": "/city"}],
            required=False,
        ),
    )
    agent = PlanningAgent(Script([doc]).model(), tools=[tools.tool("lookup", {"yes": 1})])
    result, _ = await collect(agent)
    assert result.report.steps["b"].status == "failed"
    assert result.report.steps["b"].error == "a binding could not be applied: no member 'nope' at the root"
    assert [w.kind for w in result.warnings] == ["optional_step_failed"]
    assert tools.names() == ["lookup"]


# --- M-10: replanning -------------------------------------------------------------------------------


def flaky_tools(tools: Recorder) -> list[Tool[Any]]:
    return [
        tools.tool("lookup", {"temp": 21}),
        tools.tool("primary", fail=ModelRetry("primary is down")),
        tools.tool("backup", {"temp": 22}),
        tools.tool("report", "sent", side_effect="idempotent"),
    ]


SUCCESS_THEN_FAIL = plan(
    step("base", "lookup"),
    step("fetch", "primary", depends_on=["base"]),
    step("report", "report", depends_on=["fetch"]),
)


async def test_one_replan_replaces_the_failed_step_and_keeps_successful_work() -> None:
    tools = Recorder()
    script = Script(
        [SUCCESS_THEN_FAIL],
        patches=[{"replace": ["fetch"], "steps": [step("fetch", "backup", depends_on=["base"])]}],
    )
    result, events = await collect(PlanningAgent(script.model(), tools=flaky_tools(tools)))
    assert tools.names() == ["lookup", "primary", "backup", "report"]  # base ran once
    replans = [e for e in events if isinstance(e, ReplanEvent)]
    assert [(e.revision, e.failed, e.replaced, e.added) for e in replans] == [
        (2, ("fetch",), ("fetch",), ("fetch",))
    ]
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ReplanEvent") + 1 == kinds.index("PlanRevisedEvent")
    assert result.report.revision == 2
    assert result.report.steps["fetch@1"].status == "failed"
    assert result.report.steps["fetch@1"].error == "primary is down"
    assert result.report.steps["fetch"].status == "succeeded"
    assert result.report.steps["base"].revision == 1
    assert result.stats.replans == 1
    assert script.roles() == ["Plan", "Patch", "compose"]
    assert result.plan is not None
    assert [s.capability for s in result.plan.steps] == ["lookup", "backup", "report"]


async def test_a_patch_may_repeat_kept_steps_unchanged_and_they_do_not_run_again() -> None:
    tools = Recorder()
    # The model repeats the whole plan (as small models do), changing only the failed step.
    repeated = [
        {"id": "base", "capability": "lookup", "input": {"city": "Paris"}},
        step("fetch", "backup", depends_on=["base"]),
        step("report", "report", depends_on=["fetch"]),
    ]
    script = Script([SUCCESS_THEN_FAIL], patches=[{"replace": ["fetch", "report"], "steps": repeated}])
    result, events = await collect(PlanningAgent(script.model(), tools=flaky_tools(tools)))
    assert tools.names() == ["lookup", "primary", "backup", "report"]
    replan = next(e for e in events if isinstance(e, ReplanEvent))
    assert (replan.replaced, replan.added) == (("fetch", "report"), ("fetch", "report"))
    assert result.report.steps["base"].revision == 1


async def test_a_second_failure_past_max_replans_fails_the_run() -> None:
    tools = Recorder()
    script = Script(
        [SUCCESS_THEN_FAIL],
        patches=[{"replace": ["fetch"], "steps": [step("fetch", "primary", depends_on=["base"])]}],
    )
    with pytest.raises(
        PlanStepError, match=r"required step 'fetch' failed \(primary is down\) and PlanBudget.max_replans=1"
    ) as raised:
        await PlanningAgent(script.model(), tools=flaky_tools(tools)).run("go")
    assert raised.value.step_id == "fetch"
    assert tools.names() == ["lookup", "primary", "primary"]
    report = raised.value.report
    assert report is not None
    assert report.stats.replans == 1
    assert report.steps["base"].status == "succeeded"
    assert script.roles() == ["Plan", "Patch"]


async def test_max_replans_exactly_and_one_past() -> None:
    def patch(capability: str) -> dict[str, Any]:
        return {"replace": ["fetch"], "steps": [step("fetch", capability, depends_on=["base"])]}

    tools = Recorder()
    script = Script([SUCCESS_THEN_FAIL], patches=[patch("primary"), patch("backup")])
    budget = PlanBudget(max_replans=2, max_model_calls=10)
    result = await PlanningAgent(script.model(), tools=flaky_tools(tools), budget=budget).run("go")
    assert result.stats.replans == 2
    assert tools.names() == ["lookup", "primary", "primary", "backup", "report"]
    tools = Recorder()
    with pytest.raises(PlanStepError, match="max_replans=0"):
        await PlanningAgent(
            Script([SUCCESS_THEN_FAIL]).model(), tools=flaky_tools(tools), budget=PlanBudget(max_replans=0)
        ).run("go")
    assert tools.names() == ["lookup", "primary"]


@pytest.mark.parametrize(
    ("patch", "match", "step_id"),
    [
        (
            {"replace": ["base", "fetch"], "steps": [step("fetch", "backup")]},
            "the step succeeded: its output is kept",
            "base",
        ),
        (
            {"replace": ["report"], "steps": [step("report", "report")]},
            "must replace this failed required step",
            "fetch",
        ),
        (
            {"replace": ["fetch"], "steps": [step("base", "backup")]},
            "reuses the ID of a step the patch keeps",
            "base",
        ),
        ({"replace": ["ghost"], "steps": []}, "not in the plan", "ghost"),
        (
            {"replace": ["fetch"], "steps": [step("other", "backup", depends_on=["base"])]},
            "'fetch', which is not a step",
            "report",
        ),
        (
            {"replace": ["fetch"], "steps": [step("fetch", "shell")]},
            "not in the step's tool catalog",
            "fetch",
        ),
    ],
)
async def test_invalid_patches_are_rejected_before_anything_more_runs(
    patch: dict[str, Any], match: str, step_id: str
) -> None:
    tools = Recorder()
    script = Script([SUCCESS_THEN_FAIL], patches=[patch])
    agent = PlanningAgent(script.model(), tools=flaky_tools(tools), plan_retries=0)
    with pytest.raises(PlanError, match=match) as raised:
        await agent.run("go")
    assert raised.value.step_id == step_id
    assert tools.names() == ["lookup", "primary"]


async def test_an_optional_step_failure_is_a_warning_not_a_replan() -> None:
    tools = Recorder()
    doc = plan(
        step("a", "lookup"), step("b", "primary", required=False), step("c", "report", depends_on=["b"])
    )
    result = await PlanningAgent(Script([doc]).model(), tools=flaky_tools(tools)).run("go")
    assert result.stats.replans == 0
    assert [w.kind for w in result.warnings] == ["optional_step_failed", "step_skipped"]
    assert result.report.steps["c"].status == "skipped"
    assert sorted(tools.names()) == ["lookup", "primary"]  # one parallel batch


async def test_an_unknown_outcome_is_never_retried_or_replanned() -> None:
    calls: list[str] = []

    async def send(args: dict[str, Any]) -> str:
        calls.append("send")
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    mail = Tool.from_schema(
        send,
        name="send_mail",
        parameters_json_schema={"type": "object", "properties": {}},
        takes_ctx=False,
        timeout=0.05,
    )
    script = Script(
        [plan({"id": "mail", "capability": "send_mail"})], patches=[{"replace": ["mail"], "steps": []}]
    )
    with pytest.raises(PlanStepError, match="never retried or replaced") as raised:
        await PlanningAgent(script.model(), tools=[mail]).run("go")
    assert raised.value.status == "unknown"
    assert calls == ["send"]
    assert script.roles() == ["Plan"]
    report = raised.value.report
    assert report is not None
    assert [(a.tool_name, a.status, a.side_effect, a.step_id) for a in report.actions] == [
        ("send_mail", "unknown", "non_idempotent", "mail")
    ]


async def test_a_timeout_of_an_idempotent_tool_is_a_replannable_failure() -> None:
    async def slow(args: dict[str, Any]) -> str:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    tools = Recorder()
    sync = Tool.from_schema(
        slow,
        name="sync",
        parameters_json_schema={"type": "object", "properties": {}},
        takes_ctx=False,
        timeout=0.05,
        side_effect="idempotent",
    )
    script = Script(
        [plan({"id": "s", "capability": "sync"})],
        patches=[{"replace": ["s"], "steps": [step("s", "lookup")]}],
    )
    result = await PlanningAgent(script.model(), tools=[sync, tools.tool("lookup", 1)]).run("go")
    assert result.stats.replans == 1
    assert [(a.tool_name, a.status) for a in result.actions] == [("sync", "failed")]
    assert result.report.steps["s@1"].error == "tool 'sync' timed out after 0.05 s"


# --- confirmation ---------------------------------------------------------------------------------


async def test_a_tool_needing_approval_is_not_called_without_a_confirm_callback() -> None:
    tools = Recorder()
    result = await PlanningAgent(Script([pay_plan()]).model(), tools=pay_tools(tools)).run("go")
    assert tools.names() == ["lookup"]
    assert [(a.tool_name, a.status) for a in result.actions] == [("pay", "confirmation_required")]
    assert result.report.steps["pay"].status == "confirmation_required"
    assert result.report.steps["receipt"].status == "skipped"
    assert [w.kind for w in result.warnings] == ["not_confirmed", "step_skipped"]


@pytest.mark.parametrize("answer", [True, False])
async def test_the_confirm_callback_sees_the_bound_arguments_and_decides(answer: bool) -> None:
    tools = Recorder()
    requests: list[ConfirmationRequest] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        requests.append(request)
        return answer

    result = await PlanningAgent(Script([pay_plan()]).model(), tools=pay_tools(tools), confirm=confirm).run(
        "go"
    )
    assert [(r.step_id, r.tool_name, r.args, r.side_effect) for r in requests] == [
        ("pay", "pay", {"to": "alice", "amount": 250}, "non_idempotent")
    ]
    assert requests[0].tool_call_id == result.actions[0].tool_call_id
    if answer:
        assert tools.names() == ["lookup", "pay", "lookup"]
        assert [(a.status, a.detail) for a in result.actions] == [("succeeded", None)]
    else:
        assert tools.names() == ["lookup"]
        assert [a.status for a in result.actions] == ["denied"]
        assert result.report.steps["receipt"].status == "skipped"


async def test_receipts_cover_every_non_read_only_call_in_call_order() -> None:
    tools = Recorder()
    doc = plan(
        step("r", "lookup"),
        step("w1", "write", depends_on=["r"]),
        step("w2", "write_bad", depends_on=["w1"], required=False),
    )
    agent = PlanningAgent(
        Script([doc]).model(),
        tools=[
            tools.tool("lookup", 1),
            tools.tool("write", "ok", side_effect="idempotent"),
            tools.tool(
                "write_bad",
                fail=RuntimeError("token sk-abcdefghijklmnopqrstuvwx refused"),
                side_effect="non_idempotent",
            ),
        ],
    )
    result = await agent.run("go")
    assert [(a.step_id, a.tool_name, a.status, a.side_effect) for a in result.actions] == [
        ("w1", "write", "succeeded", "idempotent"),
        ("w2", "write_bad", "failed", "non_idempotent"),
    ]
    detail = result.actions[1].detail
    assert detail is not None
    assert "RuntimeError: token" in detail
    assert "sk-abcdefghijklmnopqrstuvwx" not in detail


# --- M-11: agentic steps ---------------------------------------------------------------------------


def agentic_model(script: Script, rounds: int) -> FunctionModel:
    """The script for planning and composing; the agentic step's sub-agent calls `lookup` and `note`
    together in each of `rounds` responses, then answers."""
    offered: list[list[str]] = []

    def reply(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if not (info.instructions or "").startswith("Do the task"):
            return script(messages, info)
        offered.append([t.name for t in info.function_tools])
        done = sum(
            1
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        )
        if done < 2 * rounds:
            return ModelResponse(
                parts=[ToolCallPart("lookup", {"city": f"c{done}"}), ToolCallPart("note", {"city": "x"})]
            )
        return ModelResponse(parts=[TextPart(f"found {done} results")])

    model = FunctionModel(reply)
    model.offered = offered  # type: ignore[attr-defined]
    return model


def research_plan(max_tool_calls: int) -> dict[str, Any]:
    return plan(
        step("seed", "lookup"),
        {
            "id": "research",
            "agent": {
                "prompt": "Research the cities.",
                "tools": ["lookup", "note"],
                "max_tool_calls": max_tool_calls,
            },
            "depends_on": ["seed"],
            "bindings": [{"source_step": "seed", "source_path": "/temp", "target_path": "/temp"}],
        },
    )


async def test_an_agentic_step_runs_a_sub_agent_with_its_allowlist_and_budget() -> None:
    tools = Recorder()
    script = Script([research_plan(4)])
    model = agentic_model(script, rounds=2)
    agent = PlanningAgent(
        model,
        tools=[
            tools.tool("lookup", {"temp": 20}),
            tools.tool("note", "noted", side_effect="idempotent"),
            tools.tool("shell", "x"),
        ],
        agentic_steps=True,
        budget=PlanBudget(max_model_calls=10),
    )
    result = await agent.run("go")
    assert model.offered == [["lookup", "note"]] * 3  # type: ignore[attr-defined]
    # The seed step, then two rounds of the sub-agent's parallel calls.
    assert tools.names()[0] == "lookup"
    assert sorted(tools.names()[1:]) == ["lookup", "lookup", "note", "note"]
    assert result.evidence_of("research").value == "found 4 results"
    assert result.evidence_of("research").capability == "agent"
    assert [(a.step_id, a.tool_name, a.status) for a in result.actions] == [
        ("research", "note", "succeeded")
    ] * 2
    assert result.stats.tool_calls == 5
    assert result.stats.model_calls == 1 + 3 + 1


async def test_an_agentic_step_over_its_tool_call_budget_fails() -> None:
    tools = Recorder()
    script = Script([research_plan(3)])
    agent = PlanningAgent(
        agentic_model(script, rounds=2),
        tools=[tools.tool("lookup", {"temp": 20}), tools.tool("note", "noted", side_effect="idempotent")],
        agentic_steps=True,
        budget=PlanBudget(max_model_calls=10, max_replans=0),
    )
    with pytest.raises(PlanStepError, match="needed more than its max_tool_calls=3") as raised:
        await agent.run("go")
    assert raised.value.step_id == "research"
    assert tools.names()[0] == "lookup"
    assert sorted(tools.names()[1:]) == ["lookup", "note"]  # the second round was refused before it ran


async def test_model_retry_messages_are_redacted_in_receipts_and_events() -> None:
    tools = Recorder()
    leaky = tools.tool(
        "leak", fail=ModelRetry("rejected key sk-abcdefghijklmnopqrstuvwx"), side_effect="idempotent"
    )
    script = Script([plan({"id": "a", "capability": "leak", "input": {"city": "x"}, "required": False})])
    result, events = await collect(PlanningAgent(script.model(), tools=[leaky]))
    failed = next(e for e in events if isinstance(e, StepFailedEvent))
    detail = result.actions[0].detail
    assert detail is not None
    for text in (failed.error, detail, result.report.steps["a"].error or ""):
        assert "rejected key" in text
        assert "sk-abcdefghijklmnopqrstuvwx" not in text


async def test_plan_receipts_are_the_agents_action_receipts_with_risk_and_confirmation() -> None:

    tools = Recorder()
    # No requires_approval=: confirmation alone gates the step.
    catalog = pay_tools(tools, requires_approval=False, risk="high", confirmation="always")
    requests: list[ConfirmationRequest] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        requests.append(request)
        return True

    result = await PlanningAgent(Script([pay_plan()]).model(), tools=catalog, confirm=confirm).run("go")
    assert [(r.tool_name, r.risk) for r in requests] == [("pay", "high")]
    assert all(type(a) is ferrule.agent.ActionReceipt for a in result.actions)
    assert ActionReceipt is ferrule.agent.ActionReceipt
    assert [(a.step_id, a.tool_name, a.status, a.risk) for a in result.actions] == [
        ("pay", "pay", "succeeded", "high")
    ]


@pytest.mark.parametrize("details", [False, True])
async def test_the_agents_jsonl_observer_records_plan_and_step_events(details: bool) -> None:
    tools = Recorder()
    out = io.StringIO()
    observer = ferrule.agent.JsonlObserver(out, details=details)

    async def confirm(request: ConfirmationRequest) -> bool:
        return True

    agent = PlanningAgent(
        Script([pay_plan()]).model(), tools=pay_tools(tools), confirm=confirm, hooks=[observer]
    )
    await agent.run("go", event_handler=observer.on_event)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [line["event"] for line in lines]
    for kind in ("plan_created", "batch_start", "step_start", "step_end", "completed"):
        assert kind in kinds
    starts = [line for line in lines if line["event"] == "step_start"]
    assert [line["step_id"] for line in starts] == ["quote", "pay", "receipt"]
    # The planner's and the composer's agents report their model requests through the hook.
    agents = {line["agent"] for line in lines if line["event"] == "model_request_end"}
    assert agents == {"planning-plan", "planning-composer"}
    requests = [line for line in lines if line["event"] == "model_request_start"]
    assert all(("request" in line) is details for line in requests)  # model traffic only with details
    assert ("alice" in out.getvalue()) is details  # step inputs only with details=True
