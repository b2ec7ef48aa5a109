"""`agent.override(deps=...)` replacing an application's dependencies (and model) in a test."""

from dataclasses import dataclass

from ferrule.agent import Agent, RunContext  # was: from pydantic_ai import Agent, RunContext
from ferrule.agent.testing import TestModel  # was: from pydantic_ai.models.test import TestModel
from ferrule.core.messages import ModelRequest, ToolReturnPart  # was: from pydantic_ai.messages import ModelRequest, ToolReturnPart


@dataclass
class Database:
    name: str


agent = Agent("test", deps_type=Database)


@agent.tool
def which_database(ctx: RunContext[Database]) -> str:
    """The database in use."""
    return ctx.deps.name


def application_code() -> str:
    result = agent.run_sync("Which database?", deps=Database("production"))
    return result.output


def database_used() -> str:
    result = agent.run_sync("Which database?", deps=Database("production"))
    for message in result.all_messages():
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    return str(part.content)
    return "none"


with agent.override(model=TestModel(custom_output_text="answered"), deps=Database("test")):
    print(application_code())
    print(database_used())
print(database_used())
#> answered
#> test
#> production
