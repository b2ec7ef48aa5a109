"""The types PydanticAI tools and outputs commonly take, without pydantic: `Literal`, `Enum`, `datetime`,
`UUID`, `Decimal` and `Annotated[..., Meta]` constraints; unannotated parameters and bad signatures.

pydantic models, pydantic `Field` and attrs classes are tested in tests/test_foreign_types.py, in the
environment that has pydantic and attrs (ferrule-agent's own environment has neither).
"""

from __future__ import annotations

import datetime
import decimal
import enum
import uuid
from typing import Annotated
from typing import Any
from typing import Literal

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import Tool
from ferrule.agent.exceptions import OutputSpecError
from ferrule.agent.exceptions import ToolDefinitionError
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolReturnPart
from tests.support.scripts import Script
from tests.support.scripts import call

pytestmark = pytest.mark.anyio


class Unit(enum.Enum):
    """A temperature unit."""

    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Reading(msgspec.Struct):
    """A reading."""

    at: datetime.datetime
    id: uuid.UUID
    amount: decimal.Decimal
    unit: Unit
    kind: Literal["indoor", "outdoor"]
    count: Annotated[int, msgspec.Meta(ge=1, le=10)]


def record(
    at: datetime.datetime,
    id: uuid.UUID,
    amount: decimal.Decimal,
    unit: Unit,
    kind: Literal["indoor", "outdoor"],
    count: Annotated[int, msgspec.Meta(ge=1, le=10)],
) -> str:
    """Record a reading."""
    assert isinstance(at, datetime.datetime)
    assert isinstance(id, uuid.UUID)
    assert isinstance(amount, decimal.Decimal)
    assert isinstance(unit, Unit)
    return f"{at.isoformat()} {id} {amount + 1} {unit.value} {kind} {count}"


GOOD = {
    "at": "2026-12-01T10:00:00+00:00",
    "id": "12345678-1234-5678-1234-567812345678",
    "amount": "1.25",
    "unit": "celsius",
    "kind": "indoor",
    "count": 3,
}


def test_common_types_have_their_schema() -> None:
    schema = Tool(record).parameters_json_schema
    props = schema["properties"]
    assert props["id"] == {"type": "string", "format": "uuid"}
    assert props["kind"] == {"enum": ["indoor", "outdoor"]}
    assert props["count"] == {"type": "integer", "minimum": 1, "maximum": 10}
    assert props["unit"] == {"$ref": "#/$defs/Unit"}
    assert schema["$defs"]["Unit"]["enum"] == ["celsius", "fahrenheit"]
    assert schema["required"] == ["at", "id", "amount", "unit", "kind", "count"]


async def first_reply(agent: Agent[None, str], script: Script) -> ModelRequestPart:
    """Run `agent` and return the first part of the request that answers the scripted tool call."""
    await agent.run("go")
    request = script.seen[1][-1]
    assert isinstance(request, ModelRequest)
    return request.parts[0]


async def test_common_types_are_converted_for_the_tool() -> None:
    script = Script(call("record", GOOD))
    agent = Agent(FunctionModel(script), tools=[record])
    result = await first_reply(agent, script)
    assert isinstance(result, ToolReturnPart)
    assert result.content == (
        "2026-12-01T10:00:00+00:00 12345678-1234-5678-1234-567812345678 2.25 celsius indoor 3"
    )


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("at", "yesterday"),
        ("id", "not-a-uuid"),
        ("amount", "lots"),
        ("unit", "kelvin"),
        ("kind", "attic"),
        ("count", 11),
    ],
)
async def test_bad_values_of_common_types_are_retry_prompts(field: str, bad: Any) -> None:
    script = Script(call("record", {**GOOD, field: bad}))
    agent = Agent(FunctionModel(script), tools=[record])
    retry = await first_reply(agent, script)
    assert isinstance(retry, RetryPromptPart)
    assert isinstance(retry.content, list)
    assert retry.content[0]["loc"] == [field]


async def test_common_types_as_output() -> None:
    args = {**GOOD}
    agent = Agent(FunctionModel(Script(call("final_result", args))), output_type=Reading)
    result = await agent.run("go")
    assert result.output == Reading(
        at=datetime.datetime(2026, 12, 1, 10, tzinfo=datetime.UTC),
        id=uuid.UUID("12345678-1234-5678-1234-567812345678"),
        amount=decimal.Decimal("1.25"),
        unit=Unit.CELSIUS,
        kind="indoor",
        count=3,
    )


async def test_tool_returns_of_common_types_are_json() -> None:
    def now() -> Reading:
        """The current reading."""
        return msgspec.convert(GOOD, Reading)

    script = Script(call("now", {}))
    agent = Agent(FunctionModel(script), tools=[now])
    result = await first_reply(agent, script)
    assert isinstance(result, ToolReturnPart)
    assert result.content == {**GOOD, "at": "2026-12-01T10:00:00Z"}


# --- signatures refused at registration --------------------------------------------------------------


def test_an_unannotated_parameter_is_refused() -> None:
    def lookup(city):  # type: ignore[no-untyped-def]
        return city  # pyright: ignore[reportUnknownVariableType]

    with pytest.raises(ToolDefinitionError, match=r"parameter 'city' has no type annotation.*strict=False"):
        Tool(lookup)  # pyright: ignore[reportUnknownArgumentType]
    agent = Agent(FunctionModel(Script()))
    with pytest.raises(ToolDefinitionError, match="'city'"):
        agent.tool_plain(lookup)  # pyright: ignore[reportUnknownArgumentType]


async def test_strict_false_accepts_an_unannotated_parameter() -> None:
    def lookup(city):  # type: ignore[no-untyped-def]
        return {"city": city}  # pyright: ignore[reportUnknownVariableType]

    script = Script(call("lookup", {"city": ["any", "json"]}))
    agent = Agent(FunctionModel(script))
    agent.tool_plain(strict=False)(lookup)  # pyright: ignore[reportUnknownArgumentType]
    assert agent.tools["lookup"].parameters_json_schema["properties"] == {"city": {}}
    result = await first_reply(agent, script)
    assert isinstance(result, ToolReturnPart)
    assert result.content == {"city": ["any", "json"]}


class Opaque:
    """A class with no JSON form."""


def test_a_parameter_type_without_a_schema_is_named() -> None:
    def use(thing: Opaque) -> str:
        return "x"

    with pytest.raises(ToolDefinitionError) as info:
        Tool(use)
    message = str(info.value)
    assert "parameter 'thing' has the type Opaque" in message
    assert "use a msgspec Struct, a dataclass, a TypedDict, an attrs class or a pydantic model" in message
    assert "_args" not in message  # never the internal argument Struct's name


# --- output specs refused when the agent is built -----------------------------------------------------


def test_an_unusable_output_type_fails_when_the_agent_is_built() -> None:
    with pytest.raises(OutputSpecError, match="Opaque"):
        Agent(FunctionModel(Script()), output_type=Opaque)


def test_an_output_function_with_a_bad_signature_fails_when_the_agent_is_built() -> None:
    def finish(thing: Opaque) -> str:
        return "x"

    with pytest.raises(ToolDefinitionError, match="parameter 'thing' has the type Opaque"):
        Agent(FunctionModel(Script()), output_type=finish)
