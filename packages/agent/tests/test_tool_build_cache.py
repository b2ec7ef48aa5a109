"""A function's tool schema is derived once and shared by every agent that uses the function."""

from __future__ import annotations

from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent import Tool
from ferrule.agent._tools import _BUILT
from ferrule.agent.testing import TestModel
from ferrule.core.bounded_json import JsonTypeError
from ferrule.core.messages import ToolReturnPart

from ._support import request_parts

pytestmark = pytest.mark.anyio


async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def test_agents_share_the_derived_arguments_type_and_schema() -> None:
    first, second = Tool(add), Tool(add)
    assert first is not second
    assert first.args_type is second.args_type
    assert first.parameters_json_schema is second.parameters_json_schema
    assert first.parameters_json_schema["properties"]["a"]["description"] == "The first."
    assert first.definition == second.definition
    tools = [Agent(TestModel(), tools=[add])._core.tools["add"] for _ in range(2)]
    assert tools[0] is not tools[1]
    assert tools[0].args_type is first.args_type


def test_other_options_derive_their_own() -> None:
    plain = Tool(add)
    renamed = Tool(add, name="plus", description="Sum.")
    assert renamed.name == "plus"
    assert renamed.description == "Sum."
    assert plain.name == "add"
    assert plain.description == "Add two integers."
    # The arguments Struct is named after the tool, so another name derives another one.
    assert renamed.args_type is not plain.args_type
    bare = Tool(add, docstring_format="google", require_parameter_descriptions=True)
    assert bare.parameters_json_schema == plain.parameters_json_schema


def test_a_hand_written_schema_is_never_taken_from_the_cache() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}}
    custom = Tool(add, parameters_json_schema=schema)
    assert custom.parameters_json_schema is schema
    assert Tool(add).parameters_json_schema is not schema


def test_an_entry_goes_with_its_function() -> None:
    def make() -> Any:
        async def scoped(x: int) -> int:
            """Echo."""
            return x

        return scoped

    function = make()
    Tool(function)
    assert function in _BUILT
    before = len(_BUILT)
    del function
    assert len(_BUILT) == before - 1


class _Slotted:
    """A callable that cannot be weakly referenced: built every time, still a tool."""

    __slots__ = ()
    __name__ = "slotted"

    async def __call__(self, x: int) -> int:
        return x * 2


async def test_a_callable_without_weak_references_is_built_each_time() -> None:
    callable_ = _Slotted()
    with pytest.raises(TypeError):
        _BUILT.get(callable_)
    first, second = Tool(callable_), Tool(callable_)
    assert first.args_type is not second.args_type
    assert first.parameters_json_schema == second.parameters_json_schema
    result = await Agent(TestModel(), tools=[first]).run("go")
    assert result.output


async def test_cached_tools_validate_and_run() -> None:
    agent = Agent(TestModel(), tools=[add])
    again = Agent(TestModel(), tools=[add])
    for a in (agent, again):
        result = await a.run("add")
        returns = request_parts(result.all_messages(), ToolReturnPart)
        assert returns
        assert isinstance(returns[0].content, int)
    with pytest.raises(JsonTypeError, match=r"\$\.a"):
        Tool(add).validate_args('{"a": "x", "b": 1}')


def _state(tool: Tool[Any]) -> dict[str, Any]:
    return {slot: getattr(tool, slot, None) for slot in type(tool).__slots__}


def test_a_tool_from_the_cache_is_the_tool_a_fresh_build_gives() -> None:
    def scale(x: float, factor: int = 2) -> float:
        """Scale a number."""
        return x * factor

    cached_first = Tool(scale)
    from_cache = Tool(scale)
    _BUILT.pop(scale)
    fresh = Tool(scale)
    assert _state(from_cache) == _state(cached_first)
    for slot, value in _state(fresh).items():
        if slot in ("args_type", "definition", "_validator"):
            continue  # built anew: equal in meaning, not the same object
        assert value == _state(from_cache)[slot], slot
    assert fresh.definition == from_cache.definition


def test_a_lenient_build_does_not_answer_for_a_strict_one() -> None:
    from ferrule.agent.exceptions import ToolDefinitionError

    def loose(value: str) -> str:
        """Echo."""
        return value

    del loose.__annotations__["value"]  # as if it had never been annotated
    Tool(loose, strict=False)
    with pytest.raises(ToolDefinitionError, match="has no type annotation"):
        Tool(loose)
