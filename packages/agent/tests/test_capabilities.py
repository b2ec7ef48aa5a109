"""Capabilities: eager and on-demand bundles, dependencies, conflicts, tiers, unload policies."""

from __future__ import annotations

from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Capability
from ferrule.agent import CapabilityLayer
from ferrule.agent import HookEvent
from ferrule.agent import ModelRetry
from ferrule.agent import Paused
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolPolicy
from ferrule.agent.capabilities import MAX_CAPABILITIES
from ferrule.agent.capabilities import CapabilityConflictError
from ferrule.agent.capabilities import CapabilityDependencyError
from ferrule.agent.capabilities import CapabilityError
from ferrule.agent.capabilities import CapabilityRegistry
from ferrule.agent.capabilities import UnknownCapabilityError
from ferrule.agent.testing import FunctionModel
from ferrule.agent.toolsets import FunctionToolset
from ferrule.core.messages import CapabilityLoadDeltaPart
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import Model
from ferrule.core.settings import ModelSettings
from tests.support.scripts import Script
from tests.support.scripts import call
from tests.support.scripts import text

from ._support import request_parts

pytestmark = pytest.mark.anyio


def load(*ids: str) -> ModelResponse:
    return ModelResponse(
        parts=[
            ToolCallPart(tool_name="load_capability", args={"capability": i}, tool_call_id=f"load_{i}")
            for i in ids
        ]
    )


def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def query(sql: str) -> str:
    """Run SQL."""
    return "rows"


async def test_eager_capability_contributes_everything() -> None:
    events: list[str] = []
    validated: list[str] = []

    class Tag(ToolPolicy):
        def on_return(self, ctx: RunContext[Any], call: ToolCallPart, value: Any) -> Any:
            return f"[tagged] {value}"

    def processor(messages: list[Message]) -> list[Message]:
        events.append(f"processor:{len(messages)}")
        return messages

    def validator(output: str) -> str:
        validated.append(output)
        return output + "!"

    def run_note(ctx: RunContext[None]) -> str:
        return f"Run {ctx.run_id[:0]}ok."

    capability = Capability(
        "support",
        tools=[refund],
        toolsets=[FunctionToolset([query]).prefixed("db")],
        instructions=["Be kind.", run_note],
        hooks=[lambda e: events.append(e.kind) if e.kind == "run_start" else None],
        tool_policies=[Tag()],
        history_processors=[processor],
        output_validators=[validator],
        model_settings=ModelSettings(temperature=0.3),
    )
    script = Script(call("refund", {"order": "A1"}), text("ok"))
    agent = Agent(FunctionModel(script), instructions="Base.", capabilities=[capability])
    result = await agent.run("go")
    assert script.names(0) == ["refund", "db__query"]
    assert script.infos[0].instructions == "Base.\n\nBe kind.\n\nRun ok."
    assert script.infos[0].model_settings.temperature == 0.3
    assert request_parts(result.all_messages(), ToolReturnPart)[0].content == "[tagged] refunded A1"
    assert events == ["run_start", "processor:1", "processor:3"]
    assert validated == ["ok"]
    assert result.output == "ok!"


async def test_settings_precedence_capabilities_then_agent_then_run() -> None:
    first = Capability("a", model_settings=ModelSettings(temperature=0.1, top_p=0.5, seed=1))
    second = Capability("b", model_settings=ModelSettings(temperature=0.2, seed=2))
    script = Script()
    agent = Agent(FunctionModel(script), capabilities=[first, second], model_settings=ModelSettings(seed=3))
    await agent.run("go", model_settings=ModelSettings(max_tokens=10))
    settings = script.infos[0].model_settings
    assert (settings.temperature, settings.top_p, settings.seed, settings.max_tokens) == (0.2, 0.5, 3, 10)


async def test_model_selectors_receive_the_model_chosen_so_far() -> None:
    main_script, other_script = Script(), Script()
    main, other = FunctionModel(main_script), FunctionModel(other_script)
    chain: list[str] = []

    def pick_other(ctx: RunContext[Any], model: Model) -> Model:
        chain.append(f"first saw {model is main}")
        return other

    def keep(ctx: RunContext[Any], model: Model) -> Model:
        chain.append(f"second saw {model is other}")
        return model

    agent = Agent(main, capabilities=[Capability(model_selector=pick_other), Capability(model_selector=keep)])
    await agent.run("go")
    assert chain == ["first saw True", "second saw True"]
    assert main_script.infos == []
    assert len(other_script.infos) == 1


async def test_on_demand_catalog_load_and_activation_before_next_request() -> None:
    base = Capability("base", description="Basics", instructions="Base rules.", loading="on_demand")

    def dynamic_rule(ctx: RunContext[None]) -> str:
        return "Dynamic billing rule."

    billing = Capability(
        "billing",
        description="Refunds",
        instructions=["Amounts are in cents.", dynamic_rule],
        tools=[refund],
        loading="on_demand",
        dependencies=["base"],
    )
    script = Script(load("billing"), call("refund", {"order": "A"}, "r"), text("ok"))
    agent = Agent(FunctionModel(script), capabilities=[base, billing])
    result = await agent.run("refund A")
    instructions = script.infos[0].instructions or ""
    assert "load_capability" in instructions
    assert "- base: Basics" in instructions
    assert "- billing: Refunds" in instructions
    assert script.names(0) == ["load_capability"]
    assert script.names(1) == ["refund", "load_capability"]
    loaded = request_parts(result.all_messages(), ToolReturnPart)[0]
    assert loaded.content == (
        "Loaded capabilities 'base', 'billing' (dependencies first).\n\n"
        "Base rules.\n\nAmounts are in cents.\n\nDynamic billing rule."
    )
    [delta] = request_parts(result.all_messages(), CapabilityLoadDeltaPart)
    assert delta.loaded == ["base", "billing"]
    assert delta.tool_call_id == "load_billing"


async def test_on_demand_capability_whose_dependency_conflicts_is_refused_atomically() -> None:
    readonly = Capability("readonly", instructions="Never write.", conflicts=["sql_write"])
    sql_write = Capability("sql_write", tools=[query], loading="on_demand")
    reports = Capability(
        "reports", description="Reports", tools=[refund], loading="on_demand", dependencies=["sql_write"]
    )
    script = Script(load("reports"), text("ok"))
    agent = Agent(FunctionModel(script), capabilities=[readonly, sql_write, reports])
    result = await agent.run("report")
    [refused] = request_parts(result.all_messages(), ToolReturnPart)
    assert refused.outcome == "failed"
    assert "'sql_write' conflicts with 'readonly'" in str(refused.content)
    assert "Nothing was changed" in str(refused.content)
    assert request_parts(result.all_messages(), CapabilityLoadDeltaPart) == []
    # Neither the dependency nor the capability became active.
    assert script.names(1) == ["load_capability"]


async def test_loads_in_one_step_are_checked_against_earlier_planned_loads() -> None:
    left = Capability("left", tools=[refund], loading="on_demand", conflicts=["right"])
    right = Capability("right", tools=[query], loading="on_demand")
    script = Script(load("left", "right"), text("ok"))
    result = await Agent(FunctionModel(script), capabilities=[left, right]).run("go")
    ok, refused = request_parts(result.all_messages(), ToolReturnPart)
    assert ok.outcome == "success"
    assert refused.outcome == "failed"
    assert "planned earlier in this step" in str(refused.content)
    assert script.names(1) == ["refund", "load_capability"]


async def test_unknown_capability_gets_a_retry_prompt() -> None:
    extra = Capability("extra", loading="on_demand")
    script = Script(load("nope"), text("ok"))
    result = await Agent(FunctionModel(script), capabilities=[extra]).run("go")
    [retry] = request_parts(result.all_messages(), RetryPromptPart)
    assert retry.content == "Unknown capability 'nope'. Capabilities you can load: extra"


async def test_failing_instruction_function_leaves_nothing_active() -> None:
    class Boom(Exception):
        pass

    def broken(ctx: RunContext[Any]) -> str:
        raise Boom("no instructions today")

    dep = Capability("dep", tools=[query], loading="on_demand")
    bad = Capability("bad", instructions=[broken], loading="on_demand", dependencies=["dep"])
    script = Script(load("bad"))
    with pytest.raises(Boom):
        await Agent(FunctionModel(script), capabilities=[dep, bad]).run("go")
    assert len(script.infos) == 1


async def test_loading_twice_is_harmless() -> None:
    extra = Capability("extra", tools=[refund], loading="on_demand")
    script = Script(load("extra"), load("extra"), text("ok"))
    result = await Agent(FunctionModel(script), capabilities=[extra]).run("go")
    _first, second = request_parts(result.all_messages(), ToolReturnPart)
    assert second.content == "Capability 'extra' is already loaded."
    assert len(request_parts(result.all_messages(), CapabilityLoadDeltaPart)) == 1


async def test_capability_hooks_run_after_agent_hooks_and_ctx_sees_snapshot() -> None:
    order: list[str] = []
    snapshots: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def agent_hook(event: HookEvent) -> None:
        if event.kind == "tool_execute_start":
            order.append("agent")

    def cap_hook(event: HookEvent) -> None:
        if event.kind == "tool_execute_start":
            order.append("cap")

    def inspect_tool(ctx: RunContext[Any]) -> str:
        assert ctx.capabilities is not None
        snapshots.append((ctx.capabilities.active, ctx.capabilities.loaded_on_demand))
        return "ok"

    extra = Capability("extra", tools=[inspect_tool], hooks=[cap_hook], loading="on_demand")
    script = Script(load("extra"), call("inspect_tool", {}), text("ok"))
    await Agent(
        FunctionModel(script),
        capabilities=[Capability("always")],
        hooks=[agent_hook],
    ).run("go", capabilities=[extra])
    assert order == ["agent", "agent", "cap"]  # the load call ran before the capability was active
    assert snapshots == [(("always", "extra"), ("extra",))]


async def test_tiers_order_contributions_whatever_the_layer_order() -> None:
    def tagged(name: str) -> Capability[Any]:
        return Capability(name, instructions=f"tier {name}")

    script = Script()
    agent = Agent(FunctionModel(script), capabilities=[tagged("agent")])
    await agent.run(
        "go",
        capabilities=[tagged("run")],
        capability_layers=[
            CapabilityLayer("subagent", [tagged("subagent")]),
            CapabilityLayer("nested", [tagged("nested")]),
            CapabilityLayer("inherited", [tagged("inherited1"), tagged("inherited2")]),
        ],
    )
    assert script.infos[0].instructions == "\n\n".join(
        f"tier {n}" for n in ["inherited1", "inherited2", "agent", "run", "nested", "subagent"]
    )


async def test_history_unload_reconstructs_on_a_later_run() -> None:
    extra = Capability("extra", tools=[refund], loading="on_demand")
    first = Script(load("extra"), text("ok"))
    result = await Agent(FunctionModel(first), capabilities=[extra]).run("go")
    later = Script()
    await Agent(FunctionModel(later), capabilities=[extra]).run(
        "again", message_history=result.all_messages()
    )
    assert later.names(0) == ["refund", "load_capability"]


async def test_run_end_unload_forgets_between_runs() -> None:
    extra = Capability("extra", tools=[refund], loading="on_demand", unload="run_end")
    first = Script(load("extra"), text("ok"))
    result = await Agent(FunctionModel(first), capabilities=[extra]).run("go")
    assert first.names(1) == ["refund", "load_capability"]
    later = Script()
    await Agent(FunctionModel(later), capabilities=[extra]).run(
        "again", message_history=result.all_messages()
    )
    assert later.names(0) == ["load_capability"]


async def test_run_end_unload_survives_pause_and_resume() -> None:
    ran: list[str] = []

    def pay(order: str) -> str:
        """Pay."""
        ran.append(order)
        return "paid"

    extra = Capability(
        "extra", tools=[Tool(pay, requires_approval=True)], loading="on_demand", unload="run_end"
    )

    def make(*responses: ModelResponse) -> tuple[Agent[None, str], Script]:
        script = Script(*responses)
        return Agent(FunctionModel(script), capabilities=[extra]), script

    agent, _ = make(load("extra"), call("pay", {"order": "A"}, "p"))
    paused = await agent.run_until_pause("go")
    assert isinstance(paused, Paused)
    assert paused.state.capabilities == ["extra"]
    agent, script = make(text("ok"))
    resumed = await agent.resume(paused.to_json(), {"p": Approved()})
    assert not isinstance(resumed, Paused)
    assert ran == ["A"]
    assert script.names(0) == ["pay", "load_capability"]


def test_registry_validation() -> None:
    with pytest.raises(CapabilityError, match="needs a stable id"):
        Capability(loading="on_demand")
    with pytest.raises(CapabilityError, match="needs a stable id"):
        Capability(dependencies=["x"])
    with pytest.raises(CapabilityError, match="invalid capability id"):
        Capability("has space")
    with pytest.raises(CapabilityError, match="two different capabilities have the id 'a'"):
        CapabilityRegistry([Capability("a"), Capability("a")])
    with pytest.raises(UnknownCapabilityError, match="depends on 'missing'"):
        CapabilityRegistry([Capability("a", dependencies=["missing"])])
    with pytest.raises(CapabilityDependencyError, match="cycle: a -> b -> a"):
        CapabilityRegistry([Capability("a", dependencies=["b"]), Capability("b", dependencies=["a"])])
    with pytest.raises(CapabilityConflictError, match="'b' conflicts with 'a'"):
        CapabilityRegistry([Capability("a"), Capability("b", conflicts=["a"])]).eager_plan()
    same = Capability("same")
    assert CapabilityRegistry(
        [CapabilityLayer("run", [same]), CapabilityLayer("agent", [same])]
    ).capabilities == (same,)


def test_registry_plans_dependencies_first_without_an_agent() -> None:
    a = Capability("a", loading="on_demand")
    b = Capability("b", loading="on_demand", dependencies=["a"])
    c = Capability("c", loading="on_demand", dependencies=["b", "a"])
    registry = CapabilityRegistry([c, b, a])
    assert [x.id for x in registry.plan(["c"])] == ["a", "b", "c"]
    assert [x.id for x in registry.plan(["c"], active=[a])] == ["b", "c"]
    with pytest.raises(UnknownCapabilityError):
        registry.plan(["zzz"])


def test_capability_count_limit() -> None:
    at_limit = [Capability(f"c{i}") for i in range(MAX_CAPABILITIES)]
    assert len(CapabilityRegistry(at_limit).capabilities) == MAX_CAPABILITIES
    with pytest.raises(CapabilityError, match=f"at most {MAX_CAPABILITIES}"):
        CapabilityRegistry([*at_limit, Capability("one_more")])


async def test_structural_errors_fail_before_the_first_request() -> None:
    script = Script()
    agent = Agent(FunctionModel(script), capabilities=[Capability("a")])
    with pytest.raises(CapabilityConflictError):
        await agent.run("go", capabilities=[Capability("b", conflicts=["a"])])
    with pytest.raises(UnknownCapabilityError):
        await agent.run("go", capabilities=[Capability("b", dependencies=["nope"])])
    assert script.infos == []


async def test_capability_validator_retry_counts_as_output_retry() -> None:
    def strict(output: str) -> str:
        if output != "good":
            raise ModelRetry("say good")
        return output

    script = Script(text("bad"), text("good"))
    result = await Agent(FunctionModel(script), capabilities=[Capability(output_validators=[strict])]).run(
        "go"
    )
    assert result.output == "good"
    assert request_parts(result.all_messages(), RetryPromptPart)[0].content == "say good"
