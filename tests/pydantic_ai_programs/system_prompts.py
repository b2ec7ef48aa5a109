"""Static and dynamic system prompts (`system_prompt=` and `@agent.system_prompt`), kept in the history."""

from ferrule.agent import Agent, RunContext  # was: from pydantic_ai import Agent, RunContext
from ferrule.core.messages import ModelRequest, SystemPromptPart, UserPromptPart  # was: from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart

agent = Agent(
    "test",
    deps_type=str,
    system_prompt="Use the customer's name while replying to them.",
)


@agent.system_prompt
def add_the_users_name(ctx: RunContext[str]) -> str:
    return f"The user's name is {ctx.deps}."


@agent.system_prompt
def add_the_date() -> str:
    return "The date is 2026-12-01."


result = agent.run_sync("What is the date?", deps="Frank")
first = result.all_messages()[0]
assert isinstance(first, ModelRequest)
for part in first.parts:
    if isinstance(part, (SystemPromptPart, UserPromptPart)):
        print(part.part_kind, "|", part.content)
#> system-prompt | Use the customer's name while replying to them.
#> system-prompt | The user's name is Frank.
#> system-prompt | The date is 2026-12-01.
#> user-prompt | What is the date?
again = agent.run_sync("And tomorrow?", deps="Frank", message_history=result.all_messages())
kept = [p for m in again.all_messages() if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, SystemPromptPart)]
print(len(kept))
#> 3
