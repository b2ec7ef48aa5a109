"""Sampling and elicitation: server requests answered by application callbacks (or a ferrule model)."""

from __future__ import annotations

import base64
import logging
from collections.abc import Awaitable
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeVar
from typing import cast

import msgspec

from ferrule.core.messages import BinaryContent
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import UserContent
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.settings import ModelSettings

from ._types import ElicitationHandler
from ._types import ElicitationRequest
from ._types import SamplingHandler
from ._types import SamplingRequest
from ._types import SamplingResponse

if TYPE_CHECKING:
    from mcp_types import ErrorData

__all__ = ["elicitation_callback", "sampling_callback", "sampling_with_model"]

logger = logging.getLogger("ferrule.mcp")

_RequestT = TypeVar("_RequestT")
_ResponseT = TypeVar("_ResponseT")

_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_call": "toolUse"}


def sampling_with_model(
    model: Model, *, max_tokens: int = 4096, settings: ModelSettings | None = None
) -> SamplingHandler:
    """A sampling handler that answers with `model`: one buffered request per server request.

    The server's `system_prompt` becomes the instructions of that request only; nothing reaches the
    agent's own conversation. `max_tokens` caps what a server may ask for.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")

    async def handler(request: SamplingRequest) -> SamplingResponse:
        base = settings or ModelSettings()
        call_settings = msgspec.structs.replace(
            base,
            max_tokens=min(request.max_tokens, max_tokens),
            temperature=request.temperature if request.temperature is not None else base.temperature,
            stop_sequences=request.stop_sequences or base.stop_sequences,
        )
        call = ModelCall(
            messages=request.messages, instructions=request.system_prompt, settings=call_settings
        )
        response = await model.request(call)
        text = "".join(part.content for part in response.parts if isinstance(part, TextPart))
        reason = _STOP_REASONS.get(response.finish_reason or "stop", response.finish_reason)
        return SamplingResponse(text=text, model=response.model_name or model.model_name, stop_reason=reason)

    return handler


def _content(block: Any) -> UserContent:
    kind = getattr(block, "type", None)
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return BinaryContent(data=base64.b64decode(block.data, validate=True), media_type=block.mime_type)
    raise ValueError(f"sampling content of type {kind!r} is not supported")


def _messages(sampling_messages: list[Any]) -> list[Message]:
    messages: list[Message] = []
    for message in sampling_messages:
        content: Any = message.content
        blocks = cast("list[Any]", content) if isinstance(content, list) else [content]
        contents = [_content(block) for block in blocks]
        if message.role == "assistant":
            texts = [c for c in contents if isinstance(c, str)]
            if len(texts) != len(contents):
                raise ValueError("assistant sampling messages may only hold text")
            messages.append(ModelResponse(parts=[TextPart("".join(texts))]))
        else:
            prompt: str | list[UserContent] = (
                contents[0] if len(contents) == 1 and isinstance(contents[0], str) else contents
            )
            messages.append(ModelRequest(parts=[UserPromptPart(prompt)]))
    return messages


def sampling_callback(handler: SamplingHandler, server_id: str) -> Any:
    """The SDK's `sampling_callback` calling `handler` with a ferrule `SamplingRequest`."""
    import mcp_types as types

    async def callback(context: Any, params: Any) -> Any:
        try:
            preferences = params.model_preferences
            hints: list[str | None] = (
                [hint.name for hint in cast("list[Any]", preferences.hints or [])]
                if preferences is not None
                else []
            )
            request = SamplingRequest(
                server_id=server_id,
                messages=_messages(list(params.messages)),
                system_prompt=params.system_prompt,
                max_tokens=params.max_tokens,
                temperature=params.temperature,
                stop_sequences=params.stop_sequences,
                model_hints=[hint for hint in hints if hint],
            )
        except ValueError as exc:
            return types.ErrorData(code=types.INVALID_PARAMS, message=f"unsupported sampling request: {exc}")
        response = await _answer(handler, request, "sampling", server_id)
        if isinstance(response, types.ErrorData):
            return response
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=response.text),
            model=response.model,
            stop_reason=response.stop_reason,
        )

    return callback


def elicitation_callback(handler: ElicitationHandler, server_id: str) -> Any:
    """The SDK's `elicitation_callback` calling `handler` with a ferrule `ElicitationRequest`."""
    import mcp_types as types

    async def callback(context: Any, params: Any) -> Any:
        if getattr(params, "mode", "form") == "url":
            request = ElicitationRequest(
                server_id=server_id, message=params.message, mode="url", url=params.url
            )
        else:
            request = ElicitationRequest(
                server_id=server_id, message=params.message, requested_schema=dict(params.requested_schema)
            )
        response = await _answer(handler, request, "elicitation", server_id)
        if isinstance(response, types.ErrorData):
            return response
        return types.ElicitResult(action=response.action, content=response.content)

    return callback


async def _answer(
    handler: Callable[[_RequestT], Awaitable[_ResponseT]], request: _RequestT, kind: str, server_id: str
) -> _ResponseT | ErrorData:
    """`handler(request)`; a failure of the handler is logged here and answered with a generic SDK
    error (the exception itself is not sent to the server)."""
    import mcp_types as types

    try:
        return await handler(request)
    except Exception:
        logger.exception("the %s handler for MCP server %r failed", kind, server_id)
        return types.ErrorData(code=types.INTERNAL_ERROR, message="the client could not complete the request")
