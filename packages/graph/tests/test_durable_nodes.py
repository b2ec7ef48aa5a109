"""Agent nodes in a durable run (B-06): their steps live beneath `graph.<node-id>.step.<n>`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent import RunCorrelation
from ferrule.agent.durable import Binding
from ferrule.agent.durable import DurableError
from ferrule.agent.durable import bind
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.graph import GraphBuilder
from ferrule.graph.agent import AgentRunOptions
from ferrule.graph.agent import agent_node
from tests.support.durable_engine import Crash
from tests.support.durable_engine import Engine

from ._support import chain

pytestmark = pytest.mark.anyio


def two_agent_graph(seen: list[str], correlation: RunCorrelation | None = None) -> Any:
    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append(info.function_tools[0].name if info.function_tools else "model")
        return ModelResponse(parts=[TextPart("ok")])

    writer = Agent(FunctionModel(answer))
    critic = Agent(FunctionModel(answer))

    def prepare(ctx: Any, text: str) -> tuple[str, AgentRunOptions]:
        return text, AgentRunOptions(correlation=correlation) if correlation else AgentRunOptions()

    g = GraphBuilder[None, None, str, Any, Any]()
    g.start(lambda ctx, text: text)
    g.step("write", agent_node(writer, prepare=prepare, apply=lambda ctx, r: r.output))
    g.step("review", agent_node(critic, prepare=prepare, apply=lambda ctx, r: r.output))
    g.end(lambda ctx, value: value)
    chain(g, "write", "review")
    return g.build()


async def test_each_node_has_its_namespace_and_a_replay_reuses_it() -> None:
    seen: list[str] = []
    graph = two_agent_graph(seen)
    engine = Engine()
    engine.crash_at = ("wf.graph.review", "before")
    with bind(Binding("g-1", "wf"), engine), pytest.raises(Crash):
        await graph.run("draft")
    engine.crash_at = None
    with bind(Binding("g-1", "wf"), engine):
        assert await graph.run("draft") == "ok"
    assert engine.executed == [
        "wf.graph.write.step.0.step.0.model_request",
        "wf.graph.review.step.1.step.0.model_request",
    ]
    assert seen == ["model", "model"], "the writer's request is not made again on replay"


async def test_a_correlation_run_id_other_than_the_binding_is_refused() -> None:
    graph = two_agent_graph([], RunCorrelation(run_id="other"))
    with (
        bind(Binding("g-2"), Engine()),
        pytest.raises(DurableError, match="correlation run ID 'other' differs from the durable run's 'g-2'"),
    ):
        await graph.run("draft")
