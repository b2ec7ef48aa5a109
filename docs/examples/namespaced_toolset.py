"""A namespaced toolset with a tool policy: the model sees `fs__read` and `fs__delete`, and a policy
refuses deletions outside a scratch folder before the tool runs.

Runs offline with a scripted FunctionModel. Set FERRULE_EXAMPLE_MODEL (e.g. "openai:gpt-5-mini")
to use a real model through an installed provider package instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ferrule.agent import Agent
from ferrule.agent import ModelRetry
from ferrule.agent import RunContext
from ferrule.agent import ToolPolicy
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.agent.toolsets import FunctionToolset
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart

FILES = {"notes.txt": "buy milk", "scratch/tmp.txt": "draft"}


def read(path: str) -> str:
    """Read a file.

    Args:
        path: The file's path.
    """
    return FILES.get(path, "no such file")


def delete(path: str) -> str:
    """Delete a file.

    Args:
        path: The file's path.
    """
    FILES.pop(path, None)
    print(f"deleted {path}")
    return "deleted"


class ScratchOnly(ToolPolicy):
    """Deletions are allowed only under scratch/; anything else is refused before it runs."""

    tools = frozenset({"fs__delete"})

    def on_call(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> None:
        if not args.path.startswith("scratch/"):
            raise ModelRetry(
                f"Deleting {args.path} is not allowed; only files under scratch/ may be deleted."
            )


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    """Stands in for a real model: tries two deletions, then reports what happened."""
    print("tools offered:", ", ".join(d.name for d in info.function_tools))
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    answers = [p for p in last.parts if isinstance(p, (ToolReturnPart, RetryPromptPart))]
    if not answers:
        return ModelResponse(
            parts=[
                ToolCallPart(tool_name="fs__delete", args={"path": "notes.txt"}, tool_call_id="d1"),
                ToolCallPart(tool_name="fs__delete", args={"path": "scratch/tmp.txt"}, tool_call_id="d2"),
            ]
        )
    refused = [a.tool_call_id for a in answers if isinstance(a, RetryPromptPart)]
    return ModelResponse(parts=[TextPart(f"Cleaned up scratch; {len(refused)} deletion was refused.")])


files = FunctionToolset([read, delete], id="files")
agent = Agent(
    os.environ.get("FERRULE_EXAMPLE_MODEL") or FunctionModel(scripted_model),
    instructions="Tidy up the workspace with the fs tools.",
    toolsets=[files.prefixed("fs")],
    tool_policies=[ScratchOnly()],
)

if __name__ == "__main__":
    result = agent.run_sync("Delete notes.txt and the scratch file.")
    print(result.output)
    print("remaining:", ", ".join(sorted(FILES)))
