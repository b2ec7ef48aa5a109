"""A draft → critique → revise loop of two agents in a typed graph, on an embedded local model.

    python docs/examples/graph_review.py                      # topic, at most 3 rounds, bar 8
    python docs/examples/graph_review.py "tide pools" --rounds 2 --bar 11
    python docs/examples/graph_review.py --mermaid            # print the graph as Mermaid text

The writer drafts, the critic scores the draft (typed output), a decision either finishes (score
at or above `--bar`, or `--rounds` reached) or sends the critic's feedback to the writer to revise.
Half-way, after the first critique, the run is snapshotted and continued from that snapshot by a
freshly built graph, as another process would: no completed node runs again.

The model is Qwen2.5-Coder-0.5B inside this process (`ferrule-llamacpp`, downloaded and verified on
the first run), or `FERRULE_LOCAL_MODEL`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
import msgspec

from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.core.model import Model
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import UsageLimits
from ferrule.graph import DecisionResult
from ferrule.graph import EdgeMetadata
from ferrule.graph import Graph
from ferrule.graph import GraphBuilder
from ferrule.graph import GraphContext
from ferrule.graph import JsonCodec
from ferrule.graph import NextNode
from ferrule.graph import NodeMetadata
from ferrule.graph.agent import agent_node


class Critique(msgspec.Struct):
    """The critic's verdict on a draft."""

    score: int
    """How good the draft is, from 1 (poor) to 10 (excellent)."""
    feedback: str
    """One concrete improvement."""


class Review(msgspec.Struct, kw_only=True):
    """The graph's state: everything the loop learned (snapshotted as JSON)."""

    topic: str = ""
    max_rounds: int = 3
    bar: int = 8
    draft: str = ""
    rounds: int = 0
    scores: list[int] = msgspec.field(default_factory=list[int])
    feedback: str = ""
    branches: list[str] = msgspec.field(default_factory=list[str])


class Outcome(msgspec.Struct):
    """What the graph returns."""

    text: str
    rounds: int
    scores: list[int]
    branches: list[str]


Ctx = GraphContext[Review, None]


def write_prompt(ctx: Ctx, _draft: str) -> str:
    return f"Write two sentences about {ctx.state.topic}."


def revise_prompt(ctx: Ctx, draft: str) -> str:
    return (
        f"Revise this text about {ctx.state.topic}.\nText: {draft}\nImprovement to make: {ctx.state.feedback}"
    )


def critique_prompt(ctx: Ctx, draft: str) -> str:
    return f"Text about {ctx.state.topic}:\n{draft}"


def keep_draft(ctx: Ctx, result: AgentRunResult[str]) -> str:
    ctx.state.draft = result.output.strip()
    return ctx.state.draft


def keep_critique(ctx: Ctx, result: AgentRunResult[Critique]) -> str:
    ctx.state.rounds += 1
    ctx.state.scores.append(max(1, min(10, result.output.score)))
    ctx.state.feedback = result.output.feedback
    return ctx.state.draft  # the draft passes through to the decision


def enough(ctx: Ctx, draft: str) -> DecisionResult[str]:
    state = ctx.state
    branch = "done" if state.scores[-1] >= state.bar or state.rounds >= state.max_rounds else "revise"
    state.branches.append(branch)
    return DecisionResult(branch, draft)


def build_graph(model: Model | str | None) -> Graph[Review, None, str, str, Outcome]:
    """The review graph (`model=None` builds it for pictures only)."""
    # Small budgets: the loop runs on a 0.5B model in CI. A small model that loops fails fast.
    limits = UsageLimits(request_limit=3)
    writer = Agent(
        model,
        name="writer",
        instructions="You write short, vivid prose. Answer with the text only: at most two sentences.",
        model_settings=ModelSettings(max_tokens=80, temperature=0),
        usage_limits=limits,
    )
    critic = Agent(
        model,
        name="critic",
        output_type=Critique,
        instructions=(
            "You are a demanding editor. Score the text from 1 to 10 and give one improvement "
            "in at most ten words."
        ),
        model_settings=ModelSettings(max_tokens=200, temperature=0),
        usage_limits=limits,
    )

    def start(ctx: Ctx, topic: str) -> str:
        ctx.state.topic = topic
        return ""

    g = GraphBuilder[Review, None, str, str, Outcome](definition_id="docs.graph_review.v1")
    g.start(start, metadata=NodeMetadata(label="topic"))
    g.step(
        "draft",
        agent_node(writer, prepare=write_prompt, apply=keep_draft),
        metadata=NodeMetadata(group="writer"),
    )
    g.step(
        "critique",
        agent_node(critic, prepare=critique_prompt, apply=keep_critique),
        metadata=NodeMetadata(group="critic", description="typed output: Critique(score, feedback)"),
    )
    g.decision("enough", enough, metadata=NodeMetadata(label="good enough?", group="critic"))
    g.step(
        "revise",
        agent_node(writer, prepare=revise_prompt, apply=keep_draft),
        metadata=NodeMetadata(group="writer"),
    )
    g.end(
        lambda ctx, draft: Outcome(draft, ctx.state.rounds, list(ctx.state.scores), list(ctx.state.branches))
    )
    g.entry("draft")
    g.connect("draft", "critique")
    g.connect("critique", "enough")
    g.branch("enough", "revise", "revise", metadata=EdgeMetadata(label="below the bar"))
    g.branch_finish("enough", "done", metadata=EdgeMetadata(label="good, or out of rounds"))
    g.connect("revise", "critique")
    return g.build()


CODEC = JsonCodec(Review, str)


async def review(model: Model, topic: str, rounds: int, bar: int) -> Outcome:
    """Run the loop; snapshot after the first critique and finish from the snapshot."""
    graph = build_graph(model)
    run = await graph.iter(topic, state=Review(max_rounds=rounds, bar=bar))
    while run.next_node != NextNode("enough", graph.node_index("enough")):
        step = await run.next()
        print(f"step {run.completed_steps}: next {step}", file=sys.stderr)
    snapshot = run.snapshot(CODEC)
    at = run.next_node
    assert at is not None  # the loop stopped before "enough"
    print(f"snapshot: {len(snapshot)} bytes at {at.name} after {run.completed_steps} steps")
    # A new graph object, as a new process would build it, continues where the snapshot stopped.
    resumed = build_graph(model).resume_snapshot(snapshot, CODEC)
    print(
        f"resumed at: {resumed.next_node.name if resumed.next_node else None} step {resumed.completed_steps}"
    )
    outcome = await resumed.run_to_end()
    print(f"steps: {resumed.completed_steps}")
    return outcome


async def main(topic: str, rounds: int, bar: int) -> None:
    from ferrule.providers.llamacpp import LlamaCppServer

    name = os.environ.get("FERRULE_LOCAL_MODEL", "qwen2.5-coder-0.5b")
    async with LlamaCppServer.start(model=name) as server:
        print(f"model: local {name} at {server.base_url}", file=sys.stderr)
        outcome = await review(server.model(), topic, rounds, bar)
    print(f"rounds: {outcome.rounds}")
    print(f"scores: {','.join(map(str, outcome.scores))}")
    print(f"branches: {','.join(outcome.branches)}")
    print(f"text: {outcome.text}")


def _args(argv: list[str]) -> Any:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("topic", nargs="?", default="a lighthouse in a storm")
    parser.add_argument("--rounds", type=int, default=3, help="most critique rounds (default 3)")
    parser.add_argument("--bar", type=int, default=8, help="score that ends the loop (default 8)")
    parser.add_argument("--mermaid", action="store_true", help="print the graph as Mermaid text and exit")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = _args(sys.argv[1:])
    if args.mermaid:
        print(build_graph(None).render_mermaid(title="draft, critique, revise"), end="")
    else:
        anyio.run(main, args.topic, args.rounds, args.bar)
