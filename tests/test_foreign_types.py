"""pydantic models and attrs classes as tool parameters, tool results and output types.

Here, not in packages/agent/tests: ferrule-agent depends on neither library (it detects pydantic
lazily), so its isolated environment has neither; the workspace environment has both.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
from typing import Annotated
from typing import Any

import attrs
import pydantic
import pytest

from ferrule.agent import Agent
from ferrule.agent import NativeOutput
from ferrule.agent import Tool
from ferrule.agent.exceptions import OutputSpecError
from ferrule.agent.exceptions import ToolDefinitionError
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.planning import ConfirmationRequest
from ferrule.planning import PlanningAgent
from tests.support.scripts import Script
from tests.support.scripts import call
from tests.support.scripts import text

pytestmark = pytest.mark.anyio


class Address(pydantic.BaseModel):
    """A postal address."""

    city: str = pydantic.Field(description="The city, capitalised")
    zip_code: str = pydantic.Field(min_length=5, max_length=5)

    @pydantic.field_validator("city")
    @classmethod
    def capitalised(cls, value: str) -> str:
        if value != value.title():
            raise ValueError("write the city capitalised")
        return value


class Person(pydantic.BaseModel):
    """A person and where they live."""

    name: str
    age: int = pydantic.Field(ge=0, le=150, description="Age in years")
    address: Address
    born: datetime.date | None = None


def last_request(script: Script) -> ModelRequest:
    request = script.seen[-1][-1]
    assert isinstance(request, ModelRequest)
    return request


# --- tool parameters ---------------------------------------------------------------------------------


def test_a_pydantic_parameter_schema_comes_from_pydantic() -> None:
    def register(person: Person, note: str = "") -> str:
        """Register a person.

        Args:
            person: Who to register.
            note: A remark.
        """
        return person.name

    schema = Tool(register).parameters_json_schema
    assert schema["properties"]["person"] == {"$ref": "#/$defs/Person", "description": "Who to register."}
    person = schema["$defs"]["Person"]
    assert person["properties"]["age"] == {
        "description": "Age in years",
        "maximum": 150,
        "minimum": 0,
        "title": "Age",
        "type": "integer",
    }
    assert person["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert schema["$defs"]["Address"]["properties"]["city"]["description"] == "The city, capitalised"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["person"]


async def test_a_pydantic_parameter_is_validated_and_passed_as_a_model() -> None:
    seen: list[Person] = []

    def register(person: Person) -> str:
        """Register a person."""
        seen.append(person)
        return f"registered {person.name}"

    args = {"person": {"name": "Ada", "age": 36, "address": {"city": "London", "zip_code": "12345"}}}
    script = Script(call("register", args))
    await Agent(FunctionModel(script), tools=[register]).run("go")
    assert seen == [Person(name="Ada", age=36, address=Address(city="London", zip_code="12345"))]
    result = last_request(script).parts[0]
    assert isinstance(result, ToolReturnPart)
    assert result.content == "registered Ada"


async def test_a_field_validator_failure_is_a_retry_prompt_like_msgspec_errors() -> None:
    def register(person: Person) -> str:
        """Register a person."""
        return person.name

    bad = {"person": {"name": "Ada", "age": 36, "address": {"city": "london", "zip_code": "12345"}}}
    good = {"person": {"name": "Ada", "age": 36, "address": {"city": "London", "zip_code": "12345"}}}
    script = Script(call("register", bad, "c1"), call("register", good, "c2"))
    await Agent(FunctionModel(script), tools=[register]).run("go")
    retry = script.seen[1][-1].parts[0]
    assert isinstance(retry, RetryPromptPart)
    assert retry.content == [
        {
            "type": "invalid_argument",
            "loc": ["person", "address", "city"],
            "msg": "Value error, write the city capitalised",
        }
    ]
    result = last_request(script).parts[0]
    assert isinstance(result, ToolReturnPart)
    assert result.content == "Ada"


async def test_constraints_of_annotated_field_hold() -> None:
    def pick(count: Annotated[int, pydantic.Field(gt=0, le=3)]) -> int:
        """Pick some."""
        return count

    schema = Tool(pick).parameters_json_schema
    assert schema["properties"]["count"]["exclusiveMinimum"] == 0
    assert schema["properties"]["count"]["maximum"] == 3
    script = Script(call("pick", {"count": 0}, "c1"), call("pick", {"count": 2}, "c2"))
    await Agent(FunctionModel(script), tools=[pick]).run("go")
    retry = script.seen[1][-1].parts[0]
    assert isinstance(retry, RetryPromptPart)
    assert isinstance(retry.content, list)
    assert retry.content[0]["loc"] == ["count"]
    assert "greater than 0" in retry.content[0]["msg"]


def test_an_unknown_field_is_refused() -> None:
    def register(person: Person) -> str:
        """Register a person."""
        return person.name

    tool = Tool(register)
    with pytest.raises(pydantic.ValidationError):
        tool.validate_args(
            {"person": {"name": "a", "age": 1, "address": {"city": "A", "zip_code": "12345"}}, "x": 1}
        )


class Coded(pydantic.BaseModel):
    """A code whose schema has a `pattern`, which ferrule's schema check refuses."""

    code: str = pydantic.Field(pattern="^[A-Z]{3}$")


def test_a_pydantic_schema_outside_the_local_dialect_is_refused_at_registration() -> None:
    def use(value: Coded) -> str:
        """Use it."""
        return value.code

    with pytest.raises(ToolDefinitionError, match=r"tool 'use'.*Coded.*pattern"):
        Tool(use)


# --- tool results -------------------------------------------------------------------------------------


async def test_a_pydantic_model_returned_by_a_tool_is_its_json() -> None:
    def find() -> Person:
        """Find someone."""
        return Person(
            name="Ada",
            age=36,
            address=Address(city="London", zip_code="12345"),
            born=datetime.date(1815, 12, 10),
        )

    script = Script(call("find", {}))
    await Agent(FunctionModel(script), tools=[find]).run("go")
    result = last_request(script).parts[0]
    assert isinstance(result, ToolReturnPart)
    assert result.content == {
        "name": "Ada",
        "age": 36,
        "address": {"city": "London", "zip_code": "12345"},
        "born": "1815-12-10",
    }


# --- output types ---------------------------------------------------------------------------------------


def test_a_pydantic_output_schema_comes_from_pydantic() -> None:
    seen: list[dict[str, Any]] = []

    def answer(messages: Any, info: Any) -> Any:
        seen.append(info.output_tools[0].parameters_json_schema)
        return call(
            "final_result", {"name": "Ada", "age": 36, "address": {"city": "London", "zip_code": "12345"}}
        )

    result = Agent(FunctionModel(answer), output_type=Person).run_sync("go")
    assert result.output == Person(name="Ada", age=36, address=Address(city="London", zip_code="12345"))
    assert seen[0]["description"] == "A person and where they live."
    assert seen[0]["$defs"]["Address"]["properties"]["zip_code"]["minLength"] == 5
    assert "title" not in seen[0]


async def test_a_pydantic_output_validator_failure_is_a_retry_prompt() -> None:
    bad = {"name": "Ada", "age": 36, "address": {"city": "london", "zip_code": "12345"}}
    good = {"name": "Ada", "age": 36, "address": {"city": "London", "zip_code": "12345"}}
    script = Script(call("final_result", bad, "c1"), call("final_result", good, "c2"))
    result = await Agent(FunctionModel(script), output_type=Person).run("go")
    assert result.output.address.city == "London"
    retry = script.seen[1][-1].parts[0]
    assert isinstance(retry, RetryPromptPart)
    assert retry.content == [
        {
            "type": "invalid_argument",
            "loc": ["address", "city"],
            "msg": "Value error, write the city capitalised",
        }
    ]


async def test_a_list_of_pydantic_models_is_wrapped_as_output() -> None:
    value = [{"city": "London", "zip_code": "12345"}, {"city": "Paris", "zip_code": "75001"}]
    script = Script(call("final_result", {"value": value}))
    result = await Agent(FunctionModel(script), output_type=list[Address]).run("go")
    assert result.output == [
        Address(city="London", zip_code="12345"),
        Address(city="Paris", zip_code="75001"),
    ]


async def test_a_pydantic_output_in_native_mode_is_validated() -> None:

    script = Script(text('{"name": "Ada", "age": 36, "address": {"city": "London", "zip_code": "12345"}}'))
    result = await Agent(FunctionModel(script), output_type=NativeOutput(Person)).run("go")
    assert result.output.name == "Ada"


async def test_an_output_validator_changing_a_pydantic_output_is_revalidated() -> None:
    good = {"name": "Ada", "age": 36, "address": {"city": "London", "zip_code": "12345"}}
    script = Script(call("final_result", good, "c1"), call("final_result", good, "c2"))
    agent = Agent(FunctionModel(script), output_type=Person)
    changed: list[bool] = []

    @agent.output_validator
    def lower(value: Person) -> Person:
        if changed:
            return value
        changed.append(True)
        return value.model_copy(update={"address": Address.model_construct(city="london", zip_code="12345")})

    result = await agent.run("go")
    assert result.output.address.city == "London"
    retry = script.seen[1][-1].parts[0]
    assert isinstance(retry, RetryPromptPart)


def test_an_unusable_pydantic_output_fails_when_the_agent_is_built() -> None:
    with pytest.raises(OutputSpecError, match=r"Coded.*pattern"):
        Agent(FunctionModel(Script()), output_type=Coded)


# --- attrs ------------------------------------------------------------------------------------------------


@attrs.define
class Point:
    """A point."""

    x: int
    y: int = 0


async def test_attrs_classes_as_parameter_result_and_output() -> None:
    def move(point: Point) -> Point:
        """Move a point right."""
        return Point(point.x + 1, point.y)

    assert Tool(move).parameters_json_schema["$defs"]["Point"]["required"] == ["x"]
    script = Script(call("move", {"point": {"x": 1}}, "c1"), call("final_result", {"x": 5, "y": 6}, "c2"))
    result = await Agent(FunctionModel(script), tools=[move], output_type=Point).run("go")
    assert result.output == Point(5, 6)
    moved = script.seen[1][-1].parts[0]
    assert isinstance(moved, ToolReturnPart)
    assert moved.content == {"x": 2, "y": 0}


# --- laziness ---------------------------------------------------------------------------------------------


def test_the_agent_never_imports_pydantic_itself() -> None:
    code = (
        "import sys\n"
        "from ferrule.agent import Agent, Tool\n"
        "from ferrule.agent.testing import TestModel\n"
        "def f(x: int) -> int:\n    return x\n"
        "Agent(TestModel(), tools=[f]).run_sync('go')\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class Payee(pydantic.BaseModel):
    """Who is paid."""

    name: str
    iban: str = pydantic.Field(min_length=4)


async def test_a_plan_step_confirms_a_tool_taking_a_pydantic_model_with_its_json() -> None:
    paid: list[Payee] = []
    requests: list[ConfirmationRequest] = []

    def pay(payee: Payee, cents: int) -> str:
        """Pay someone."""
        paid.append(payee)
        return f"paid {cents} to {payee.name}"

    def respond(messages: list[Message], info: AgentInfo) -> ModelResponse:
        if info.output_tools:
            step = {
                "id": "pay",
                "capability": "pay",
                "input": {"payee": {"name": "Ann", "iban": "DE00"}, "cents": 5},
            }
            return ModelResponse(
                parts=[ToolCallPart(info.output_tools[0].name, {"version": 1, "steps": [step]})]
            )
        return ModelResponse(parts=[TextPart("done")])

    def confirm(request: ConfirmationRequest) -> bool:
        requests.append(request)
        return True

    agent = PlanningAgent(FunctionModel(respond), tools=[Tool(pay, requires_approval=True)], confirm=confirm)
    result = await agent.run("pay Ann")
    assert [(r.tool_name, r.args) for r in requests] == [
        ("pay", {"payee": {"name": "Ann", "iban": "DE00"}, "cents": 5})
    ]
    assert paid == [Payee(name="Ann", iban="DE00")]
    assert result.report.steps["pay"].status == "succeeded"
