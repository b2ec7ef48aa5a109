"""A synchronous approval round trip, as PydanticAI's deferred-tools docs write it: a run whose model
calls tools that need approval ends with `DeferredToolRequests`, and a second `run_sync`, given the
first run's history and `DeferredToolResults`, runs the approved calls and tells the model of the
denied one."""

from ferrule.agent import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied  # was: from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from ferrule.agent.testing import AgentInfo, FunctionModel  # was: from pydantic_ai.models.function import AgentInfo, FunctionModel
from ferrule.core.messages import Message as ModelMessage  # was: from pydantic_ai.messages import ModelMessage
from ferrule.core.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # was: from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart


def files_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    returns = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart("; ".join(f"{p.tool_name}: {p.content}" for p in returns))])
    return ModelResponse(
        parts=[
            ToolCallPart("update_file", {"path": "README.md", "content": "Hello, world!"}, tool_call_id="readme"),
            ToolCallPart("update_file", {"path": ".env", "content": ""}, tool_call_id="dotenv"),
            ToolCallPart("delete_file", {"path": "__init__.py"}, tool_call_id="init"),
        ]
    )


agent = Agent(FunctionModel(files_model), output_type=[str, DeferredToolRequests])


@agent.tool_plain(requires_approval=True)
def update_file(path: str, content: str) -> str:
    """Write a file."""
    return f"File {path!r} updated: {content!r}"


@agent.tool_plain(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"File {path!r} deleted"


result = agent.run_sync("Delete `__init__.py`, write `Hello, world!` to `README.md`, and clear `.env`")
messages = result.all_messages()
requests = result.output
assert isinstance(requests, DeferredToolRequests)
print(len(requests.approvals), len(requests.calls))
#> 3 0

results = DeferredToolResults()
for call in requests.approvals:
    print(call.tool_call_id, call.tool_name, call.args)
    if call.tool_name == "update_file":
        results.approvals[call.tool_call_id] = True
    else:
        results.approvals[call.tool_call_id] = ToolDenied("Deleting files is not allowed")
#> readme update_file {'path': 'README.md', 'content': 'Hello, world!'}
#> dotenv update_file {'path': '.env', 'content': ''}
#> init delete_file {'path': '__init__.py'}

result = agent.run_sync(message_history=messages, deferred_tool_results=results)
print(result.output)
#> update_file: File 'README.md' updated: 'Hello, world!'; update_file: File '.env' updated: ''; delete_file: Deleting files is not allowed
print(len(result.new_messages()), len(result.all_messages()), result.usage.requests, result.usage.tool_calls)
#> 2 4 1 2
