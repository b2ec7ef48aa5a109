"""Context budgets: measurement, exact limits, the overflow hook, specific errors before the request."""

from __future__ import annotations

from typing import Any
from typing import cast

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import ContextBudget
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent.context_budget import ContextBudgetExceeded
from ferrule.agent.context_budget import ContextMediaTooLarge
from ferrule.agent.context_budget import ContextOverflow
from ferrule.agent.context_budget import ContextPromptTooLarge
from ferrule.agent.context_budget import ContextSchemaTooLarge
from ferrule.agent.context_budget import ContextTokenLimitExceeded
from ferrule.agent.context_budget import ContextToolsTooLarge
from ferrule.agent.context_budget import ContextUsage
from ferrule.agent.context_budget import default_estimate
from ferrule.agent.context_budget import measure
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from tests.support.scripts import Script

pytestmark = pytest.mark.anyio


def lookup(key: str) -> str:
    """Look a key up."""
    return key


def test_measure_classifies_provider_facing_bytes() -> None:
    tool = ToolDefinition(name="ab", description="cd", parameters_json_schema={"type": "object"})
    call = ModelCall(
        messages=[
            ModelRequest(
                parts=[
                    UserPromptPart(
                        content=[
                            "hé",
                            BinaryContent(data=b"12345", media_type="image/png"),
                            ImageUrl(url="https://x/y"),
                        ]
                    )
                ]
            ),
            ModelResponse(
                parts=[TextPart("ok"), ToolCallPart(tool_name="ab", args='{"k":1}', tool_call_id="1")]
            ),
            ModelRequest(parts=[ToolReturnPart(tool_name="ab", content="res", tool_call_id="1")]),
        ],
        instructions="sys",
        tools=[tool],
        output=JsonSchemaFormat(name="o", schema={"type": "string"}),
    )
    usage = measure(call)
    assert usage.prompt_bytes == len("sys") + len("hé".encode()) + len("ok")
    assert usage.tool_bytes == len("ab") + len('{"k":1}') + len("ab") + len("res") + len("ab") + len("cd")
    assert usage.schema_bytes == len(b'{"type":"object"}') + len(b'{"type":"string"}')
    assert usage.media_bytes == 5 + len("https://x/y")
    assert (usage.messages, usage.tools) == (3, 1)


def test_default_estimate_is_four_bytes_per_token_plus_framing() -> None:
    usage = ContextUsage(prompt_bytes=10, tool_bytes=4, schema_bytes=2, media_bytes=999, messages=2, tools=1)
    assert default_estimate(usage) == 4 + 2 * 4 + 8


def test_input_capacity_reserves_output() -> None:
    assert ContextBudget(max_total_tokens=1000).input_capacity(200) == 800
    assert ContextBudget(max_total_tokens=1000, reserve_output_tokens=100).input_capacity(200) == 900
    assert ContextBudget(max_total_tokens=1000, max_input_tokens=500).input_capacity(None) == 500
    assert ContextBudget(max_prompt_bytes=1).input_capacity(200) is None
    with pytest.raises(UserError):
        ContextBudget(max_prompt_bytes=-1)


@pytest.mark.parametrize(
    ("field", "error"),
    [
        ("max_prompt_bytes", ContextPromptTooLarge),
        ("max_tool_bytes", ContextToolsTooLarge),
        ("max_schema_bytes", ContextSchemaTooLarge),
        ("max_input_tokens", ContextTokenLimitExceeded),
    ],
)
async def test_each_limit_accepts_its_exact_value_and_refuses_one_less(
    field: str, error: type[ContextBudgetExceeded]
) -> None:
    probe = Script(then="ok")
    agent = Agent(FunctionModel(probe), tools=[lookup])
    captured: list[ContextUsage] = []

    def estimator(usage: ContextUsage, call: ModelCall) -> int:
        captured.append(usage)
        return default_estimate(usage, call)

    await agent.run("a prompt", context_budget=ContextBudget(max_prompt_bytes=10**9, estimator=estimator))
    measured = captured[0]
    exact = {
        "max_prompt_bytes": measured.prompt_bytes,
        "max_tool_bytes": measured.tool_bytes,
        "max_schema_bytes": measured.schema_bytes,
        "max_input_tokens": default_estimate(measured),
    }[field]
    ok = Script(then="ok")
    await Agent(FunctionModel(ok), tools=[lookup]).run(
        "a prompt", context_budget=ContextBudget(**cast("dict[str, Any]", {field: exact}))
    )
    assert len(ok.seen) == 1
    refused = Script(then="ok")
    with pytest.raises(error) as caught:
        await Agent(FunctionModel(refused), tools=[lookup]).run(
            "a prompt", context_budget=ContextBudget(**cast("dict[str, Any]", {field: exact - 1}))
        )
    assert refused.seen == []  # failed before the request
    overflow = caught.value.overflow
    assert (overflow.limit, overflow.actual) == (exact - 1, exact)


async def test_media_limit() -> None:
    prompt = ["look", BinaryContent(data=b"x" * 100, media_type="image/png")]
    await Agent(FunctionModel(Script(then="ok"))).run(
        prompt, context_budget=ContextBudget(max_media_bytes=100)
    )
    with pytest.raises(
        ContextMediaTooLarge, match=r"101 bytes of media \(max_media_bytes\), over the limit of 100"
    ):
        await Agent(FunctionModel(Script(then="ok"))).run(
            [*prompt, BinaryContent(data=b"y", media_type="image/png")],
            context_budget=ContextBudget(max_media_bytes=100),
        )


async def test_total_tokens_reserve_the_requests_max_tokens() -> None:
    captured: list[int] = []

    def estimator(usage: ContextUsage, call: ModelCall) -> int:
        captured.append(call.settings.max_tokens or 0)
        return 100

    budget = ContextBudget(max_total_tokens=150, estimator=estimator)
    await Agent(FunctionModel(Script(then="ok"))).run(
        "go", context_budget=budget, model_settings=ModelSettings(max_tokens=50)
    )
    with pytest.raises(ContextTokenLimitExceeded):
        await Agent(FunctionModel(Script(then="ok"))).run(
            "go", context_budget=budget, model_settings=ModelSettings(max_tokens=51)
        )
    assert captured == [50, 51]


async def test_overflow_compacted_by_the_hook() -> None:
    script = Script(then="ok")
    overflows: list[ContextOverflow] = []

    async def compact(
        ctx: RunContext[Any], overflow: ContextOverflow, messages: list[Message]
    ) -> list[Message]:
        overflows.append(overflow)
        return [ModelRequest(parts=[UserPromptPart(content="summary")]), messages[-1]]

    history: list[Message] = [
        ModelRequest(parts=[UserPromptPart(content="x" * 400)]),
        ModelResponse(parts=[TextPart("y" * 400)]),
    ]
    agent = Agent(
        FunctionModel(script), context_budget=ContextBudget(max_prompt_bytes=300, on_overflow=compact)
    )
    result = await agent.run("latest question", message_history=history)
    assert len(overflows) == 1
    assert overflows[0].boundary == "prompt"
    assert overflows[0].actual == 800 + len("latest question")
    [view] = script.seen
    assert [m.parts[0].content for m in view] == ["summary", "latest question"]  # type: ignore[union-attr]
    assert len(result.all_messages()) == 4  # canonical history is complete


async def test_overflow_that_remains_after_the_hook_fails() -> None:
    def useless(ctx: RunContext[Any], overflow: ContextOverflow, messages: list[Message]) -> list[Message]:
        return messages

    script = Script(then="ok")
    budget = ContextBudget(max_prompt_bytes=3, on_overflow=useless)
    with pytest.raises(ContextPromptTooLarge, match="max_prompt_bytes"):
        await Agent(FunctionModel(script), context_budget=budget).run("too long")
    giving_up = ContextBudget(max_prompt_bytes=3, on_overflow=lambda ctx, o, m: None)
    with pytest.raises(ContextPromptTooLarge):
        await Agent(FunctionModel(script), context_budget=giving_up).run("too long")
    assert script.seen == []


async def test_run_budget_replaces_the_agents() -> None:
    agent = Agent(FunctionModel(Script(then="ok")), context_budget=ContextBudget(max_prompt_bytes=1))
    with pytest.raises(ContextPromptTooLarge):
        await agent.run("hello")
    result = await agent.run("hello", context_budget=ContextBudget(max_prompt_bytes=100))
    assert result.output == "ok"


async def test_tool_definitions_count_towards_the_budget() -> None:
    wide = Tool(lookup, description="d" * 500)
    with pytest.raises(ContextToolsTooLarge):
        await Agent(FunctionModel(Script(then="ok")), tools=[wide]).run(
            "go", context_budget=ContextBudget(max_tool_bytes=100)
        )


def test_usage_is_a_plain_struct() -> None:
    usage = ContextUsage(prompt_bytes=1)
    assert msgspec.json.decode(msgspec.json.encode(usage), type=ContextUsage) == usage
