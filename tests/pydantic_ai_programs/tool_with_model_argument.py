"""A tool taking a pydantic `BaseModel` argument, called by `TestModel` with arguments from its schema."""

from pydantic import BaseModel, Field

from ferrule.agent import Agent  # was: from pydantic_ai import Agent
from ferrule.agent.testing import TestModel  # was: from pydantic_ai.models.test import TestModel
from ferrule.core.messages import ModelRequest, ToolReturnPart  # was: from pydantic_ai.messages import ModelRequest, ToolReturnPart


class Address(BaseModel):
    street: str
    city: str = Field(description="The city")


class User(BaseModel):
    name: str = Field(description="The user's full name")
    age: int = Field(ge=18, description="Age in years")
    address: Address


agent = Agent(TestModel())


@agent.tool_plain
def register(user: User) -> str:
    """Register a user."""
    assert isinstance(user.address, Address)
    return f"registered {user.name}, {user.age}, of {user.address.city}"


result = agent.run_sync("Register a user")
for message in result.all_messages():
    if isinstance(message, ModelRequest):
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                print(part.tool_name, part.content)
#> register registered a, 18, of a
print(result.usage.requests, result.usage.tool_calls)
#> 2 1
