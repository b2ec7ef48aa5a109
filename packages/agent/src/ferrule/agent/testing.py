"""Models for tests: `FunctionModel` (your function answers) and `TestModel` (calls every tool once).

Both are real [`Model`][ferrule.core.model.Model] subclasses, so they go through the same profile
check and stream contract as provider models.

```python
from ferrule.agent import Agent
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import ModelResponse, TextPart

def answer(messages, info):
    return ModelResponse(parts=[TextPart("hello")])

agent = Agent(FunctionModel(answer))
```
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any
from typing import TypeAlias
from typing import cast

import msgspec

from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ModelResponsePart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import OutputFormat
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import ToolDefinition
from ferrule.core.profile import ModelProfile
from ferrule.core.settings import ModelSettings
from ferrule.core.streaming import ResponseBuilder
from ferrule.core.usage import RequestUsage

from ._schema import example_value
from ._util import is_async

__all__ = [
    "AgentInfo",
    "DeltaThinking",
    "DeltaToolCall",
    "DeltaToolCalls",
    "FunctionDef",
    "FunctionModel",
    "StreamFunctionDef",
    "TestModel",
    "full_profile",
]


def full_profile() -> ModelProfile:
    """A profile that declares every portable feature (test models accept anything)."""
    return ModelProfile(
        supports_tools=True,
        supports_parallel_tool_calls=True,
        supports_tool_choice=True,
        supports_instructions=True,
        supports_json_object_output=True,
        supports_json_schema_output=True,
        default_structured_output_mode="tool",
        supports_thinking=True,
        reasoning_efforts=frozenset({"none", "minimal", "low", "medium", "high", "xhigh", "max"}),
        content_kinds=frozenset({"text", "image", "audio", "video", "document", "uploaded-file"}),
        supported_settings=frozenset(ModelSettings.__struct_fields__),
    )


_FULL_PROFILE = full_profile()


@dataclasses.dataclass(frozen=True, slots=True)
class AgentInfo:
    """What the agent offered the model on this request."""

    function_tools: Sequence[ToolDefinition]
    """Function tools the model may call."""
    output_tools: Sequence[ToolDefinition]
    """Output tools (calling one ends the run)."""
    allow_text_output: bool
    """Whether a plain-text answer is acceptable."""
    output: OutputFormat
    """The output format of the request."""
    instructions: str | None
    """The resolved instructions."""
    model_settings: ModelSettings
    """The merged settings."""
    call: ModelCall
    """The whole call."""


@dataclasses.dataclass(frozen=True, slots=True)
class DeltaToolCall:
    """A fragment of a streamed tool call."""

    name: str | None = None
    """More of the tool name (usually all of it, in the first fragment)."""
    json_args: str | None = None
    """More argument JSON text."""
    tool_call_id: str | None = None
    """The call's ID (in any fragment)."""


@dataclasses.dataclass(frozen=True, slots=True)
class DeltaThinking:
    """A fragment of streamed reasoning."""

    content: str | None = None
    """More reasoning text."""
    signature: str | None = None
    """The reasoning's signature."""


DeltaToolCalls: TypeAlias = dict[int, DeltaToolCall]
"""Tool-call fragments keyed by the call's index in the response."""

FunctionDef: TypeAlias = Callable[[list[Message], AgentInfo], "ModelResponse | Awaitable[ModelResponse]"]
"""`fn(messages, info) -> ModelResponse`, sync or async."""

StreamFunctionDef: TypeAlias = Callable[
    [list[Message], AgentInfo], "AsyncIterator[str | DeltaToolCalls | DeltaThinking]"
]
"""`fn(messages, info)` yielding text deltas, `{index: DeltaToolCall}` dicts or `DeltaThinking`."""


def _estimate_usage(messages: Sequence[Message], response: ModelResponse) -> RequestUsage:
    """A rough token count (words), so usage limits can be tested without a tokenizer."""
    input_tokens = 50
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                input_tokens += _words(getattr(part, "content", None))
        else:
            input_tokens += _response_words(message)
    return RequestUsage(input_tokens=input_tokens, output_tokens=_response_words(response))


def _response_words(response: ModelResponse) -> int:
    total = 0
    for part in response.parts:
        if isinstance(part, (TextPart, ThinkingPart)):
            total += _words(part.content)
        elif isinstance(part, ToolCallPart):
            total += 1 + _words(part.args if isinstance(part.args, str) else json.dumps(part.args or {}))
    return total


def _words(content: Any) -> int:
    if isinstance(content, str):
        return len(content.split())
    if content is None:
        return 0
    if isinstance(content, list):
        return sum(_words(c) for c in cast("list[Any]", content))
    try:
        return len(msgspec.json.encode(content).split())
    except (TypeError, msgspec.EncodeError):
        return 1


class FunctionModel(Model):
    """A model whose answers come from your function: `fn(messages, info) -> ModelResponse`.

    Pass `stream_function` for streamed answers: it yields text deltas (`str`), tool-call fragments
    (`{index: DeltaToolCall}`) or `DeltaThinking`. Buffered requests use `function` when given,
    otherwise they consume `stream_function`; streamed requests use `stream_function` when given,
    otherwise they stream the buffered answer part by part.
    """

    def __init__(
        self,
        function: FunctionDef | None = None,
        *,
        stream_function: StreamFunctionDef | None = None,
        model_name: str | None = None,
        profile: ModelProfile | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        if function is None and stream_function is None:
            raise TypeError("FunctionModel needs a function or a stream_function")
        self.function = function
        """The buffered answer function."""
        self.stream_function = stream_function
        """The streaming answer function."""
        self._is_async = function is not None and is_async(function)
        name = model_name
        if name is None:
            parts = [
                f.__name__ for f in (function, stream_function) if f is not None and hasattr(f, "__name__")
            ]
            name = "function:" + ":".join(parts) if parts else "function"
        self._model_name = name
        self._profile = profile or _FULL_PROFILE
        self.settings = settings

    @property
    def model_name(self) -> str:
        """`function:<names of the functions>` unless given."""
        return self._model_name

    @property
    def provider_name(self) -> str:
        """Always `function`."""
        return "function"

    @property
    def profile(self) -> ModelProfile:
        """Everything is supported unless a profile was given."""
        return self._profile

    @staticmethod
    def _info(call: ModelCall) -> AgentInfo:
        return AgentInfo(
            function_tools=call.tools,
            output_tools=call.output_tools,
            allow_text_output=call.allow_text_output,
            output=call.output,
            instructions=call.instructions,
            model_settings=call.settings,
            call=call,
        )

    def _complete(self, call: ModelCall, response: ModelResponse) -> ModelResponse:
        if not isinstance(response, ModelResponse):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"FunctionModel function must return a ModelResponse, got {type(response).__name__}"
            )
        if response.model_name is None:
            response.model_name = self._model_name
        if response.provider_name is None:
            response.provider_name = "function"
        if response.usage == _EMPTY_USAGE:
            response.usage = _estimate_usage(call.messages, response)
        return response

    async def _request(self, call: ModelCall) -> ModelResponse:
        if self.function is None:
            return await super()._request(call)
        result = self.function(list(call.messages), self._info(call))
        if self._is_async or inspect.isawaitable(result):
            result = await cast("Awaitable[ModelResponse]", result)
        return self._complete(call, result)

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        if self.stream_function is None:
            response = await self._request(call)
            for event in _replay(response):
                yield event
            yield ResponseCompleted(response)
            return
        builder = ResponseBuilder()
        items = self.stream_function(list(call.messages), self._info(call))
        try:
            async for item in items:
                if isinstance(item, str):
                    for event in builder.text(item, key="text"):
                        yield event
                elif isinstance(item, DeltaThinking):
                    for event in builder.thinking(item.content, key="thinking", signature=item.signature):
                        yield event
                elif isinstance(item, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
                    for index, delta in item.items():
                        for event in builder.tool_call(
                            key=("call", index),
                            tool_name=delta.name,
                            args=delta.json_args,
                            tool_call_id=delta.tool_call_id,
                        ):
                            yield event
                else:
                    raise TypeError(
                        f"stream_function yielded {item!r}; yield str, DeltaToolCall dicts or DeltaThinking"
                    )
        finally:
            # Close the function's generator now (its `finally` runs when the run stops reading),
            # not whenever the garbage collector reaches it.
            aclose = getattr(items, "aclose", None)
            if aclose is not None:
                await aclose()
        for event in builder.finish():
            yield event
        parts = builder.parts
        response = ModelResponse(
            parts=parts,
            model_name=self._model_name,
            provider_name="function",
            finish_reason="tool_call" if any(isinstance(p, ToolCallPart) for p in parts) else "stop",
        )
        response.usage = _estimate_usage(call.messages, response)
        yield ResponseCompleted(response)


def _replay(response: ModelResponse) -> Iterator[ModelStreamEvent]:
    """The part events of a buffered `response`, as a stream would have delivered them."""
    builder = ResponseBuilder()
    for index, part in enumerate(response.parts):
        if isinstance(part, TextPart):
            yield from builder.text(part.content, key=index)
        elif isinstance(part, ToolCallPart):
            yield from builder.tool_call(
                key=index, tool_name=part.tool_name, args=part.args, tool_call_id=part.tool_call_id
            )
        elif isinstance(part, ThinkingPart):
            yield from builder.thinking(part.content, key=index, signature=part.signature)
        else:
            yield from builder.add(part, key=index)
        yield from builder.end(index)


_EMPTY_USAGE = RequestUsage()


class TestModel(Model):
    """A model that calls every offered tool once with generated arguments, then answers.

    After its tool calls it returns `custom_output_text` (default: a JSON summary of the tool
    results), or calls the first output tool with `custom_output_args` (default: generated from
    the schema), or answers native / prompted JSON matching the schema.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        *,
        call_tools: Sequence[str] | str = "all",
        custom_output_text: str | None = None,
        custom_output_args: Any = None,
        model_name: str = "test",
        profile: ModelProfile | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        self.call_tools = call_tools
        """`"all"` or the names of the tools to call."""
        self.custom_output_text = custom_output_text
        """The final text answer, if set."""
        self.custom_output_args = custom_output_args
        """The output tool's arguments (or the native JSON), if set."""
        self._model_name = model_name
        self._profile = profile or _FULL_PROFILE
        self.settings = settings
        self.last_call: ModelCall | None = None
        """The last call received (for assertions)."""

    @property
    def model_name(self) -> str:
        """`test` unless given."""
        return self._model_name

    @property
    def provider_name(self) -> str:
        """Always `test`."""
        return "test"

    @property
    def profile(self) -> ModelProfile:
        """Everything is supported unless a profile was given."""
        return self._profile

    def _answer(self, call: ModelCall) -> ModelResponse:
        self.last_call = call
        messages = call.messages
        last = messages[-1] if messages else None
        tools = [t for t in call.tools if self.call_tools == "all" or t.name in self.call_tools]
        first_turn = isinstance(last, ModelRequest) and not any(
            isinstance(p, (ToolReturnPart, RetryPromptPart)) for p in last.parts
        )
        if first_turn and tools:
            parts: list[ModelResponsePart] = [
                ToolCallPart(
                    tool_name=t.name,
                    args=cast("dict[str, Any]", example_value(t.parameters_json_schema)),
                    tool_call_id=f"test_call_{i}",
                )
                for i, t in enumerate(tools)
            ]
            return ModelResponse(
                parts=parts, model_name=self._model_name, provider_name="test", finish_reason="tool_call"
            )
        if isinstance(last, ModelRequest):
            retries = [
                p
                for p in last.parts
                if isinstance(p, RetryPromptPart) and p.tool_name in {t.name for t in tools}
            ]
            if retries:
                parts = [
                    ToolCallPart(
                        tool_name=cast("str", r.tool_name),
                        args=_example_for(call.tools, cast("str", r.tool_name)),
                        tool_call_id=r.tool_call_id,
                    )
                    for r in retries
                ]
                return ModelResponse(
                    parts=parts, model_name=self._model_name, provider_name="test", finish_reason="tool_call"
                )
        return self._final(call, last)

    def _final(self, call: ModelCall, last: Message | None) -> ModelResponse:
        if call.output_tools and not (call.allow_text_output and self.custom_output_text is not None):
            tool = call.output_tools[0]
            args = self.custom_output_args
            if args is None:
                args = example_value(tool.parameters_json_schema)
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        tool_name=tool.name, args=cast("dict[str, Any]", args), tool_call_id="test_output"
                    )
                ],
                model_name=self._model_name,
                provider_name="test",
                finish_reason="tool_call",
            )
        output = call.output
        schema = (
            output.schema if isinstance(output, JsonSchemaFormat) else _prompted_schema(call.instructions)
        )
        if schema is not None:
            value = self.custom_output_args if self.custom_output_args is not None else example_value(schema)
            text = json.dumps(value)
        elif self.custom_output_text is not None:
            text = self.custom_output_text
        else:
            text = self._summary(last)
        return ModelResponse(
            parts=[TextPart(text)], model_name=self._model_name, provider_name="test", finish_reason="stop"
        )

    @staticmethod
    def _summary(last: Message | None) -> str:
        if isinstance(last, ModelRequest):
            results = {p.tool_name: p.content for p in last.parts if isinstance(p, ToolReturnPart)}
            if results:
                return json.dumps(results, default=str)
        return "success (no tool calls)"

    async def _request(self, call: ModelCall) -> ModelResponse:
        response = self._answer(call)
        response.usage = _estimate_usage(call.messages, response)
        return response

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        response = await self._request(call)
        builder = ResponseBuilder()
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                # Stream text word by word so partial output can be observed.
                words = part.content.split(" ")
                for i, word in enumerate(words):
                    for event in builder.text(word if i == 0 else " " + word, key=index):
                        yield event
            elif isinstance(part, ToolCallPart):
                for event in builder.tool_call(
                    key=index,
                    tool_name=part.tool_name,
                    args=part.args_as_json_str(),
                    tool_call_id=part.tool_call_id,
                ):
                    yield event
            for event in builder.end(index):
                yield event
        yield ResponseCompleted(response)


def _example_for(tools: Sequence[ToolDefinition], name: str) -> dict[str, Any]:
    for tool in tools:
        if tool.name == name:
            return cast("dict[str, Any]", example_value(tool.parameters_json_schema))
    return {}


def _prompted_schema(instructions: str | None) -> dict[str, Any] | None:
    if not instructions:
        return None
    marker = "compatible with this schema:\n\n"
    start = instructions.find(marker)
    if start < 0:
        return None
    text = instructions[start + len(marker) :]
    try:
        decoded, _ = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return None
    return cast("dict[str, Any]", decoded) if isinstance(decoded, dict) else None
