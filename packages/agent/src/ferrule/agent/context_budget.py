"""Context budgets: measure each provider-facing request and refuse one that does not fit.

```python
from ferrule.agent.context_budget import ContextBudget

agent = Agent(model, context_budget=ContextBudget(max_total_tokens=128_000, on_overflow=compact))
```

Before each request, after history processors and this step's tools, the request the provider
will receive is measured in bytes: prompt text (instructions, prompts, response text and
thinking), tool definitions and tool traffic, JSON schemas (tool parameters and output), and media
(binary data and URLs). Input tokens are estimated from that measurement (by default four bytes
per token plus a fixed framing per message and per tool; pass `estimator` for a real tokenizer).
The input capacity is the smaller of `max_input_tokens` and `max_total_tokens` minus the output
reservation (`reserve_output_tokens`, or the request's `max_tokens` when that is `None`). Exact
boundaries are accepted.

On overflow, `on_overflow(ctx, overflow, messages)` (sync or async) may return a replacement
provider view (for example a summary plus the last turns); it is measured once more. An overflow
that remains raises the `ContextBudgetExceeded` subclass of the first failed limit, before any
request is sent. Only the provider-facing view is compacted; the run's history stays complete.
`run(context_budget=...)` replaces the agent's budget for one run.
"""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import Literal
from typing import TypeAlias
from typing import cast

import msgspec

from ferrule.core.errors import UserError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import FilePart
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextContent
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import VideoUrl
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ToolDefinition

from ._context import RunContext
from ._errors import AgentRunError
from ._util import settled
from ._util import tighter

__all__ = [
    "BYTES_PER_TOKEN",
    "MESSAGE_FRAMING_TOKENS",
    "TOOL_FRAMING_TOKENS",
    "ContextBoundary",
    "ContextBudget",
    "ContextBudgetExceeded",
    "ContextMediaTooLarge",
    "ContextOverflow",
    "ContextPromptTooLarge",
    "ContextSchemaTooLarge",
    "ContextTokenLimitExceeded",
    "ContextToolsTooLarge",
    "ContextUsage",
    "OverflowHook",
    "TokenEstimator",
    "default_estimate",
    "measure",
]

BYTES_PER_TOKEN = 4
"""Measured bytes per estimated token in the default estimate."""
MESSAGE_FRAMING_TOKENS = 4
"""Tokens the default estimate adds per message (role markers and separators)."""
TOOL_FRAMING_TOKENS = 8
"""Tokens the default estimate adds per tool definition."""

ContextBoundary: TypeAlias = Literal["prompt", "tools", "schema", "media", "tokens"]
"""The limits, in the order they are checked."""


class ContextUsage(msgspec.Struct, frozen=True, kw_only=True):
    """The measured size of one provider-facing request."""

    prompt_bytes: int = 0
    """UTF-8 bytes of instructions, system and user prompt text, response text and thinking."""
    tool_bytes: int = 0
    """Bytes of tool names and descriptions, call arguments, tool results and retry prompts."""
    schema_bytes: int = 0
    """Encoded bytes of tool parameter schemas and the output schema."""
    media_bytes: int = 0
    """Bytes of binary content and the length of media URLs and file IDs."""
    messages: int = 0
    """Messages in the request."""
    tools: int = 0
    """Tool definitions offered (function and output tools)."""
    estimated_tokens: int = 0
    """Estimated input tokens (filled in by the estimator)."""


class ContextOverflow(msgspec.Struct, frozen=True, kw_only=True):
    """The first limit a request failed."""

    boundary: ContextBoundary
    """Which limit failed."""
    limit: int
    """The limit (bytes, or tokens for `tokens`)."""
    actual: int
    """The measured (or estimated) value."""
    usage: ContextUsage
    """The whole measurement."""


TokenEstimator: TypeAlias = Callable[[ContextUsage, ModelCall], int]
"""`estimator(usage, call) -> tokens`: replaces the default estimate (e.g. with a tokenizer)."""
OverflowHook: TypeAlias = Callable[
    [RunContext[Any], ContextOverflow, list[Message]],
    "Sequence[Message] | Awaitable[Sequence[Message] | None] | None",
]
"""`on_overflow(ctx, overflow, messages)`: a smaller provider view, or `None` to give up."""


class ContextBudgetExceeded(AgentRunError):
    """The provider-facing request is over the context budget, even after the overflow hook.

    Raised before the request is sent; the subclass names the first limit that failed.
    """

    def __init__(self, message: str, overflow: ContextOverflow) -> None:
        self.overflow = overflow
        """Which limit failed, the limit, the measured value and the whole measurement."""
        super().__init__(message)


class ContextPromptTooLarge(ContextBudgetExceeded):
    """Prompt text (instructions, prompts, response text) is over `max_prompt_bytes`."""


class ContextToolsTooLarge(ContextBudgetExceeded):
    """Tool definitions and tool traffic are over `max_tool_bytes`."""


class ContextSchemaTooLarge(ContextBudgetExceeded):
    """Tool and output JSON schemas are over `max_schema_bytes`."""


class ContextMediaTooLarge(ContextBudgetExceeded):
    """Media (binary data and URLs) is over `max_media_bytes`."""


class ContextTokenLimitExceeded(ContextBudgetExceeded):
    """The estimated input tokens are over the input capacity (`max_input_tokens`, or
    `max_total_tokens` minus the output reservation)."""


class ContextBudget(msgspec.Struct, frozen=True, kw_only=True):
    """Limits on the provider-facing request, checked before each model request."""

    max_prompt_bytes: int | None = None
    """Limit on prompt text bytes."""
    max_tool_bytes: int | None = None
    """Limit on tool definition and tool traffic bytes."""
    max_schema_bytes: int | None = None
    """Limit on JSON schema bytes."""
    max_media_bytes: int | None = None
    """Limit on media bytes."""
    max_input_tokens: int | None = None
    """Limit on estimated input tokens."""
    max_total_tokens: int | None = None
    """Context window: estimated input tokens plus the output reservation."""
    reserve_output_tokens: int | None = None
    """Tokens kept for the answer; `None` reserves the request's `max_tokens` (or nothing)."""
    estimator: TokenEstimator | None = None
    """Replaces the default token estimate."""
    on_overflow: OverflowHook | None = None
    """Called once on overflow; may return a smaller provider view."""

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name.startswith(("max_", "reserve_")) and value is not None and value < 0:
                raise UserError(f"ContextBudget.{name} must be >= 0, got {value}")

    def input_capacity(self, max_tokens: int | None) -> int | None:
        """The most input tokens a request may have, or `None` when tokens are not limited."""
        capacity = self.max_input_tokens
        if self.max_total_tokens is not None:
            reserve = (
                self.reserve_output_tokens if self.reserve_output_tokens is not None else (max_tokens or 0)
            )
            total = max(0, self.max_total_tokens - reserve)
            capacity = tighter(capacity, total)
        return capacity

    def check(self, usage: ContextUsage, max_tokens: int | None) -> ContextOverflow | None:
        """The first failed limit, or `None` when the request fits."""
        checks: tuple[tuple[ContextBoundary, int | None, int], ...] = (
            ("prompt", self.max_prompt_bytes, usage.prompt_bytes),
            ("tools", self.max_tool_bytes, usage.tool_bytes),
            ("schema", self.max_schema_bytes, usage.schema_bytes),
            ("media", self.max_media_bytes, usage.media_bytes),
            ("tokens", self.input_capacity(max_tokens), usage.estimated_tokens),
        )
        for boundary, limit, actual in checks:
            if limit is not None and actual > limit:
                return ContextOverflow(boundary=boundary, limit=limit, actual=actual, usage=usage)
        return None


def _text_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


_MEDIA_URLS = (ImageUrl, AudioUrl, VideoUrl, DocumentUrl)


class _Meter:
    __slots__ = ("media", "prompt", "tool")

    def __init__(self) -> None:
        self.prompt = 0
        self.tool = 0
        self.media = 0

    def content(self, item: Any, *, tool: bool) -> None:
        if isinstance(item, str):
            size = _text_bytes(item)
            if tool:
                self.tool += size
            else:
                self.prompt += size
        elif isinstance(item, BinaryContent):
            self.media += len(item.data)
        elif isinstance(item, _MEDIA_URLS):
            self.media += _text_bytes(item.url)
        elif isinstance(item, UploadedFile):
            self.media += _text_bytes(item.file_id)
        elif isinstance(item, TextContent):
            self.content(item.content, tool=tool)
        elif isinstance(item, list):
            for element in cast("list[Any]", item):
                self.content(element, tool=tool)
        elif item is None:
            return
        else:
            try:
                size = len(msgspec.json.encode(item))
            except (TypeError, msgspec.EncodeError):
                size = _text_bytes(str(item))
            if tool:
                self.tool += size
            else:
                self.prompt += size


def _schema_bytes(definitions: Sequence[ToolDefinition]) -> int:
    return sum(len(msgspec.json.encode(d.parameters_json_schema)) for d in definitions)


def measure(call: ModelCall, *, schema_bytes: int | None = None) -> ContextUsage:
    """Measure `call` without an estimate (`estimated_tokens` is 0).

    `schema_bytes`, when given, is used instead of encoding the tool schemas again.
    """
    meter = _Meter()
    if call.instructions:
        meter.prompt += _text_bytes(call.instructions)
    for message in call.messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, (SystemPromptPart, UserPromptPart)):
                    meter.content(part.content, tool=False)
                elif isinstance(part, (ToolReturnPart, RetryPromptPart)):
                    meter.tool += _text_bytes(part.tool_name or "")
                    meter.content(part.content, tool=True)
        else:
            for part in message.parts:
                if isinstance(part, (TextPart, ThinkingPart)):
                    meter.prompt += _text_bytes(part.content)
                elif isinstance(part, (ToolCallPart, NativeToolCallPart)):
                    meter.tool += _text_bytes(part.tool_name)
                    meter.content(part.args, tool=True)
                elif isinstance(part, NativeToolReturnPart):
                    meter.content(part.content, tool=True)
                elif isinstance(part, FilePart):
                    meter.media += len(part.content.data)
    definitions = [*call.tools, *call.output_tools]
    for definition in definitions:
        meter.tool += _text_bytes(definition.name) + _text_bytes(definition.description or "")
    if schema_bytes is None:
        schema_bytes = _schema_bytes(definitions)
    if isinstance(call.output, JsonSchemaFormat):
        schema_bytes += len(msgspec.json.encode(call.output.schema))
    return ContextUsage(
        prompt_bytes=meter.prompt,
        tool_bytes=meter.tool,
        schema_bytes=schema_bytes,
        media_bytes=meter.media,
        messages=len(call.messages),
        tools=len(definitions),
    )


def default_estimate(usage: ContextUsage, call: ModelCall | None = None) -> int:
    """Four bytes per token of text, tool and schema bytes, plus fixed framing per message and tool.

    Media is not converted to tokens (providers count images and audio in their own ways); limit
    it with `max_media_bytes`.
    """
    text = usage.prompt_bytes + usage.tool_bytes + usage.schema_bytes
    return (
        -(-text // BYTES_PER_TOKEN)
        + MESSAGE_FRAMING_TOKENS * usage.messages
        + TOOL_FRAMING_TOKENS * usage.tools
    )


_ERRORS: dict[ContextBoundary, type[ContextBudgetExceeded]] = {
    "prompt": ContextPromptTooLarge,
    "tools": ContextToolsTooLarge,
    "schema": ContextSchemaTooLarge,
    "media": ContextMediaTooLarge,
    "tokens": ContextTokenLimitExceeded,
}

_ADVICE: dict[ContextBoundary, str] = {
    "prompt": "bytes of prompt text (max_prompt_bytes)",
    "tools": "bytes of tool definitions and tool traffic (max_tool_bytes)",
    "schema": "bytes of JSON schemas (max_schema_bytes)",
    "media": "bytes of media (max_media_bytes)",
    "tokens": "estimated input tokens (the input capacity)",
}


def overflow_error(overflow: ContextOverflow) -> ContextBudgetExceeded:
    """The specific error for a remaining overflow."""
    return _ERRORS[overflow.boundary](
        f"the request has {overflow.actual} {_ADVICE[overflow.boundary]}, over the limit of {overflow.limit}; "
        "trim the history with a history processor or an on_overflow hook, or raise the ContextBudget limit",
        overflow,
    )


class BudgetEnforcer:
    """Applies one `ContextBudget` to the requests of one run (caching schema sizes)."""

    __slots__ = ("_schema_key", "_schema_size", "budget")

    def __init__(self, budget: ContextBudget) -> None:
        self.budget = budget
        self._schema_key: tuple[Any, Any] | None = None
        self._schema_size = 0

    def _measure(self, call: ModelCall) -> ContextUsage:
        key = (call.tools, call.output_tools)
        cached = self._schema_key
        if cached is None or cached[0] is not key[0] or cached[1] is not key[1]:
            self._schema_key = key
            self._schema_size = _schema_bytes([*call.tools, *call.output_tools])
        usage = measure(call, schema_bytes=self._schema_size)
        estimator = self.budget.estimator
        tokens = estimator(usage, call) if estimator is not None else default_estimate(usage, call)
        return msgspec.structs.replace(usage, estimated_tokens=int(tokens))

    async def enforce(self, call: ModelCall, ctx: RunContext[Any]) -> ModelCall:
        """`call`, or a compacted copy that fits; raises the specific error otherwise."""
        budget = self.budget
        max_tokens = call.settings.max_tokens
        overflow = budget.check(self._measure(call), max_tokens)
        if overflow is None:
            return call
        hook = budget.on_overflow
        if hook is not None:
            replacement = await settled(hook(ctx, overflow, list(call.messages)))
            if replacement is not None:
                call = msgspec.structs.replace(call, messages=list(replacement))
                overflow = budget.check(self._measure(call), max_tokens)
                if overflow is None:
                    return call
        raise overflow_error(overflow)
