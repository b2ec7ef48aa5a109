"""Tools: schemas from signatures and docstrings, argument validation, retries and return values."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import Any
from typing import Literal
from typing import TypedDict

import msgspec
import pytest
from inline_snapshot import snapshot

from ferrule.agent import Agent
from ferrule.agent import ModelRetry
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolLimits
from ferrule.agent import ToolReturn
from ferrule.agent import run_state_of
from ferrule.agent._docstring import parse_docstring
from ferrule.agent.exceptions import ToolDefinitionError
from ferrule.agent.exceptions import ToolRetriesExceeded
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from tests.support.scripts import Script
from tests.support.scripts import recorded
from tests.support.scripts import text

from ._support import parts_at

pytestmark = pytest.mark.anyio


def calls(*parts: tuple[str, Any] | tuple[str, Any, str]) -> ModelResponse:
    return ModelResponse(
        parts=[
            ToolCallPart(tool_name=p[0], args=p[1], tool_call_id=p[2] if len(p) > 2 else f"id_{i}")
            for i, p in enumerate(parts)
        ]
    )


# --- schemas ----------------------------------------------------------------------------------------


def test_google_docstring_schema() -> None:
    def search(query: str, limit: int = 10, *, exact: bool = False) -> list[str]:
        """Search the catalog.

        Longer explanation.

        Args:
            query: What to look for,
                across two lines.
            limit (int): How many results.
            exact: Match exactly.

        Returns:
            The matches.
        """
        return []

    tool = Tool(search)
    assert tool.description == "Search the catalog.\n\nLonger explanation."
    schema = tool.parameters_json_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["query"] == {"description": "What to look for, across two lines.", "type": "string"}
    assert props["limit"] == {"description": "How many results.", "type": "integer", "default": 10}
    assert props["exact"]["description"] == "Match exactly."
    assert "title" not in schema


def test_sphinx_and_numpy_docstrings() -> None:
    summary, params = parse_docstring(
        """Do it.

        :param x: The x value.
        :param int y: The y
            value.
        :returns: nothing
        """
    )
    assert summary == "Do it."
    assert params == {"x": "The x value.", "y": "The y value."}
    summary, params = parse_docstring(
        """Do numpy.

        Parameters
        ----------
        a : int
            First one.
        b : str
            Second
            one.

        Returns
        -------
        int
        """
    )
    assert summary == "Do numpy."
    assert params == {"a": "First one.", "b": "Second one."}
    assert parse_docstring(None) == (None, {})
    assert parse_docstring("Only a summary.") == ("Only a summary.", {})


class Point(msgspec.Struct):
    x: int
    y: int


@dataclasses.dataclass
class Box:
    width: float


class Opts(TypedDict):
    mode: Literal["a", "b"]


def test_unresolvable_annotation_is_a_clear_error() -> None:
    class Local(msgspec.Struct):
        x: int

    def uses_local(value: Local) -> None: ...

    with pytest.raises(ToolDefinitionError, match="cannot resolve the annotation 'Local'"):
        Tool(uses_local)


def test_context_detection_and_structured_parameters() -> None:
    def plot(ctx: RunContext[None], point: Point, box: Box, opts: Opts, tags: list[str] | None = None) -> str:
        return ""

    tool = Tool(plot)
    assert tool.takes_ctx
    schema = tool.parameters_json_schema
    assert set(schema["properties"]) == {"point", "box", "opts", "tags"}
    assert "$defs" in schema
    assert set(schema["$defs"]) >= {"Point", "Box", "Opts"}
    assert not Tool(lambda_free).takes_ctx


def lambda_free(a: int) -> int:
    return a


def test_bad_tool_definitions() -> None:
    def var(*args: int) -> None: ...

    def pos(a: int, /) -> None: ...

    def late_ctx(a: int, ctx: RunContext[None]) -> None: ...

    for fn in (var, pos, late_ctx):
        with pytest.raises(ToolDefinitionError):
            Tool(fn)
    with pytest.raises(ToolDefinitionError, match="name"):
        Tool(lambda: None)
    with pytest.raises(ToolDefinitionError, match="side_effect"):
        Tool(lambda_free, side_effect="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="timeout"):
        Tool(lambda_free, timeout=0)

    def undocumented(a: int) -> int:
        """No params documented."""
        return a

    with pytest.raises(ToolDefinitionError, match="description"):
        Tool(undocumented, require_parameter_descriptions=True)


# --- validation and retries ---------------------------------------------------------------------------


async def test_invalid_arguments_become_retry_prompts() -> None:
    script = Script(
        calls(
            ("add", '{"a": "one", "b": 2}', "c1"),
            ("add", "{not json", "c2"),
            ("add", {"a": 1, "b": 2, "c": 3}, "c3"),
        ),
        calls(("add", {"a": 1, "b": 2}, "c4")),
        text("3"),
    )

    def add(a: int, b: int) -> int:
        return a + b

    result = await Agent(FunctionModel(script), tools=[add], retries=1).run("x")
    assert result.output == "3"
    first = parts_at(result.all_messages())
    assert all(isinstance(p, RetryPromptPart) for p in first)
    assert first[0].content == [
        {"type": "invalid_argument", "loc": ["a"], "msg": "Expected `int`, got `str`"}
    ]
    assert "not valid JSON" in first[1].content
    assert "unknown field" in str(first[2].content)
    assert [p.tool_call_id for p in first] == ["c1", "c2", "c3"]
    second = parts_at(result.all_messages(), 4)
    assert isinstance(second[0], ToolReturnPart)
    assert second[0].content == 3


async def test_model_retry_budget_exact_and_past() -> None:
    attempts = 0

    def flaky(ctx: RunContext[None]) -> str:
        nonlocal attempts
        attempts += 1
        assert ctx.retry == attempts - 1
        if attempts <= 2:
            raise ModelRetry(f"try again {attempts}")
        return "ok"

    # max_retries=2: two retries are allowed, the third call succeeds.
    script = Script(calls(("flaky", {})), calls(("flaky", {})), calls(("flaky", {})), text("done"))
    result = await Agent(FunctionModel(script), tools=[Tool(flaky, max_retries=2)]).run("x")
    assert result.output == "done"
    retry = parts_at(result.all_messages())[0]
    assert isinstance(retry, RetryPromptPart)
    assert retry.content == "try again 1"
    assert retry.tool_name == "flaky"

    attempts = 0
    script = Script(calls(("flaky", {})), calls(("flaky", {})), calls(("flaky", {})), text("done"))
    with pytest.raises(ToolRetriesExceeded, match="retry budget of 1") as info:
        await Agent(FunctionModel(script), tools=[Tool(flaky, max_retries=1)]).run("x")
    state = run_state_of(info.value)
    assert state is not None
    assert state.tool_retries == {"flaky": 2}
    assert isinstance(state.messages[-1], ModelRequest)


async def test_retry_count_resets_after_success() -> None:
    outcomes = iter([ModelRetry("a"), "ok", ModelRetry("b"), "ok"])

    def tool() -> str:
        item = next(outcomes)
        if isinstance(item, Exception):
            raise item
        return item

    script = Script(*(calls(("tool", {})) for _ in range(4)), text("done"))
    result = await Agent(FunctionModel(script), tools=[Tool(tool, max_retries=1)]).run("x")
    assert result.output == "done"


async def test_unknown_tool_gets_retry_prompt_listing_tools() -> None:
    script = Script(calls(("nope", {}, "u1")), text("done"))

    def known() -> str:
        return ""

    result = await Agent(FunctionModel(script), tools=[known]).run("x")
    part = parts_at(result.all_messages())[0]
    assert isinstance(part, RetryPromptPart)
    assert part.content == "Unknown tool name: 'nope'. Available tools: known"
    assert part.tool_call_id == "u1"


async def test_unknown_tool_budget_exhausted() -> None:
    script = Script(calls(("nope", {})), calls(("nope", {})), text("done"))
    with pytest.raises(ToolRetriesExceeded):
        await Agent(FunctionModel(script), retries=1).run("x")


# --- return values ------------------------------------------------------------------------------------


async def test_return_values_of_any_encodable_type() -> None:
    class Out(msgspec.Struct):
        a: int

    @dataclasses.dataclass
    class DC:
        b: str

    def struct() -> Out:
        return Out(1)

    def dc() -> DC:
        return DC("x")

    def plain() -> dict[str, Any]:
        return {"k": [1, 2]}

    def image() -> BinaryContent:
        return BinaryContent(data=b"\x89PNG", media_type="image/png")

    script = Script(calls(("struct", {}), ("dc", {}), ("plain", {}), ("image", {})), text("done"))
    result = await Agent(FunctionModel(script), tools=[struct, dc, plain, image]).run("x")
    contents = [p.content for p in parts_at(result.all_messages())]
    assert contents[:3] == [{"a": 1}, {"b": "x"}, {"k": [1, 2]}]
    assert isinstance(contents[3], BinaryContent)
    # The history round-trips through JSON.
    msgspec.json.decode(result.all_messages_json(), type=list[Message])


async def test_unencodable_return_fails_the_run() -> None:
    def bad() -> object:
        return object()

    script = Script(calls(("bad", {})))
    with pytest.raises(ToolDefinitionError, match="cannot be encoded"):
        await Agent(FunctionModel(script), tools=[bad]).run("x")


async def test_tool_return_with_follow_up_content_in_call_order() -> None:
    def first() -> ToolReturn:
        return ToolReturn(
            "one", content=["see image", ImageUrl(url="https://example.com/a.png")], metadata={"m": 1}
        )

    def second() -> ToolReturn:
        return ToolReturn("two", content="more text")

    script = Script(calls(("first", {}), ("second", {})), text("done"))
    result = await Agent(FunctionModel(script), tools=[first, second]).run("x")
    assert recorded(result.all_messages()) == snapshot(
        [
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "x"}], "run_id": "run-1"},
            {
                "kind": "response",
                "parts": [
                    {"part_kind": "tool-call", "tool_name": "first", "args": {}, "tool_call_id": "id_0"},
                    {"part_kind": "tool-call", "tool_name": "second", "args": {}, "tool_call_id": "id_1"},
                ],
                "usage": {"input_tokens": 51, "output_tokens": 4},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "tool-return",
                        "tool_name": "first",
                        "content": "one",
                        "tool_call_id": "id_0",
                        "metadata": {"m": 1},
                    },
                    {
                        "part_kind": "tool-return",
                        "tool_name": "second",
                        "content": "two",
                        "tool_call_id": "id_1",
                    },
                    {
                        "part_kind": "user-prompt",
                        "content": ["see image", {"kind": "image-url", "url": "https://example.com/a.png"}],
                    },
                    {"part_kind": "user-prompt", "content": "more text"},
                ],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": "done"}],
                "usage": {"input_tokens": 62, "output_tokens": 1},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )


async def test_sync_tools_run_in_a_worker_thread_async_on_the_loop() -> None:
    threads: dict[str, int] = {}

    def sync_tool() -> str:
        threads["sync"] = threading.get_ident()
        return "s"

    async def async_tool() -> str:
        threads["async"] = threading.get_ident()
        return "a"

    script = Script(calls(("sync_tool", {}), ("async_tool", {})), text("done"))
    await Agent(FunctionModel(script), tools=[sync_tool, async_tool]).run("x")
    assert threads["async"] == threading.get_ident()
    assert threads["sync"] != threading.get_ident()


async def test_arguments_validated_once_per_tool_struct() -> None:
    def add(a: int, b: int = 2) -> int:
        return a + b

    tool = Tool(add)
    args_type = tool.args_type
    assert tool.validate_args('{"a": 1}').a == 1
    assert tool.validate_args({"a": 1, "b": 5}).b == 5
    assert tool.args_type is args_type
    with pytest.raises(msgspec.ValidationError, match="missing required field `a`"):
        tool.validate_args(None)  # no arguments validate as an empty object
    with pytest.raises(msgspec.ValidationError):
        tool.validate_args({"a": "x"})


async def test_result_size_limit_exact_and_past() -> None:
    def exact() -> str:
        return "x" * 100

    def over() -> str:
        return "x" * 101

    limits = ToolLimits(max_result_bytes=100)
    script = Script(calls(("exact", {}), ("over", {})), text("done"))
    agent = Agent(
        FunctionModel(script),
        tools=[Tool(exact, side_effect="read_only"), Tool(over, side_effect="read_only")],
        tool_limits=limits,
        retries=3,
    )
    result = await agent.run("x")
    parts = parts_at(result.all_messages())
    assert isinstance(parts[0], ToolReturnPart)
    assert parts[0].content == "x" * 100
    assert isinstance(parts[1], RetryPromptPart)
    assert "101 bytes exceeds the limit of 100" in parts[1].content


async def test_oversized_result_of_non_idempotent_tool_is_not_a_retry_invitation() -> None:
    def send() -> str:
        return "x" * 11

    script = Script(calls(("send", {})), text("done"))
    agent = Agent(FunctionModel(script), tools=[Tool(send, limits=ToolLimits(max_result_bytes=10))])
    result = await agent.run("x")
    part = parts_at(result.all_messages())[0]
    assert isinstance(part, ToolReturnPart)
    assert part.outcome == "failed"
    assert "Do not call it again" in part.content


async def test_follow_up_limits_exact_and_past() -> None:
    def ok() -> ToolReturn:
        return ToolReturn("r", content=["aaaaa", "bbbbb"])  # exactly 2 items and 10 bytes

    def too_many() -> ToolReturn:
        return ToolReturn("r", content=["a", "b", "c"])

    def too_big() -> ToolReturn:
        return ToolReturn("r", content=["x" * 11])

    limits = ToolLimits(max_follow_ups=2, max_follow_up_bytes=10)
    script = Script(calls(("ok", {}), ("too_many", {}), ("too_big", {})), text("done"))
    tools = [Tool(f, side_effect="idempotent") for f in (ok, too_many, too_big)]
    result = await Agent(FunctionModel(script), tools=tools, tool_limits=limits, retries=5).run("x")
    parts = parts_at(result.all_messages())
    assert isinstance(parts[0], ToolReturnPart)
    assert isinstance(parts[1], RetryPromptPart)
    assert "3 follow-up items" in parts[1].content
    assert isinstance(parts[2], RetryPromptPart)
    assert "11 bytes" in parts[2].content
    assert sum(isinstance(p, UserPromptPart) for p in parts) == 1


async def test_dynamic_instruction_sees_deps_and_tools_prepare_async() -> None:
    async def prepare(ctx: RunContext[int], definition: Any) -> Any:
        return msgspec.structs.replace(definition, description=f"for {ctx.deps}")

    def tool() -> str:
        return ""

    infos: list[AgentInfo] = []

    def fn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        infos.append(info)
        return text("x")

    await Agent(FunctionModel(fn), tools=[Tool(tool, prepare=prepare)], deps_type=int).run("x", deps=7)
    assert infos[0].function_tools[0].description == "for 7"


def test_tool_limits_validation_and_tightening() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        ToolLimits(max_concurrency=0)
    agent_limits = ToolLimits(max_concurrency=8, timeout=10)
    tightened = agent_limits.tightened(ToolLimits(max_concurrency=16, max_queue=4, timeout=20), timeout=5)
    assert (tightened.max_concurrency, tightened.max_queue, tightened.timeout) == (8, 4, 5)
