"""A pydantic `BaseModel` output with a field validator: the first answer fails it, the retry passes."""

from pydantic import BaseModel, field_validator

from ferrule.agent import Agent  # was: from pydantic_ai import Agent
from ferrule.agent.testing import AgentInfo, FunctionModel  # was: from pydantic_ai.models.function import AgentInfo, FunctionModel
from ferrule.core.messages import Message as ModelMessage  # was: from pydantic_ai.messages import ModelMessage
from ferrule.core.messages import ModelResponse, ToolCallPart  # was: from pydantic_ai.messages import ModelResponse, ToolCallPart


class CityLocation(BaseModel):
    city: str
    country: str

    @field_validator("country")
    @classmethod
    def known_country(cls, value: str) -> str:
        if value not in {"France", "United Kingdom"}:
            raise ValueError(f"{value!r} is not a country; name the sovereign state")
        return value


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    retried = len(messages) > 1  # the first answer was rejected and sent back
    country = "United Kingdom" if retried else "England"
    name = info.output_tools[0].name
    return ModelResponse(parts=[ToolCallPart(tool_name=name, args={"city": "London", "country": country})])


agent = Agent(FunctionModel(answer), output_type=CityLocation)
result = agent.run_sync("Where were the olympics held in 2012?")
print(result.output)
#> city='London' country='United Kingdom'
print(result.usage.requests)
#> 2
