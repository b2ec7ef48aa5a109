"""The model protocol: one streamed request that ends in exactly one completed response.

A provider package implements [`Model`][ferrule.core.model.Model] by subclassing it and writing
`_stream` (and, optionally, a buffered `_request` that uses a non-streaming endpoint). The base class
enforces the contract for every implementation:

* the call is checked against the model's [`ModelProfile`][ferrule.core.profile.ModelProfile] before
  any I/O;
* a successful stream ends with exactly one
  [`ResponseCompleted`][ferrule.core.model.ResponseCompleted] event holding the complete response,
  and nothing follows it;
* a stream that ends without one raises
  [`ResponseDecodeError`][ferrule.core.errors.ResponseDecodeError] instead of looking like an empty
  success.

The per-step call a model receives is a [`ModelCall`][ferrule.core.model.ModelCall]: the messages,
resolved instructions, tool definitions, output format and merged settings.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeAlias

import msgspec

from ._call import TEXT_FORMAT
from ._call import JsonObjectFormat
from ._call import JsonSchemaFormat
from ._call import ModelCall
from ._call import NativeTool
from ._call import OutputFormat
from ._call import TextFormat
from ._call import ToolDefinition
from .errors import ResponseDecodeError
from .messages import ModelResponse
from .messages import ModelResponsePart
from .profile import ModelProfile
from .settings import ModelSettings

if TYPE_CHECKING:
    from .redaction import Redactor

__all__ = [
    "TEXT_FORMAT",
    "JsonObjectFormat",
    "JsonSchemaFormat",
    "Model",
    "ModelCall",
    "ModelStreamEvent",
    "NativeTool",
    "OutputFormat",
    "PartDeltaEvent",
    "PartEndEvent",
    "PartStartEvent",
    "ResponseCompleted",
    "TextFormat",
    "TextPartDelta",
    "ThinkingPartDelta",
    "ToolCallPartDelta",
    "ToolDefinition",
]


# --- stream events -------------------------------------------------------------------------------


class TextPartDelta(msgspec.Struct, frozen=True, tag="text", tag_field="part_delta_kind"):
    """More text for a text part."""

    content_delta: str
    """The new text."""


class ThinkingPartDelta(
    msgspec.Struct, frozen=True, kw_only=True, tag="thinking", tag_field="part_delta_kind"
):
    """More reasoning text, or its signature, for a thinking part."""

    content_delta: str | None = None
    """The new reasoning text."""
    signature_delta: str | None = None
    """Signature data for the part (replaces, not appends, on most providers)."""


class ToolCallPartDelta(
    msgspec.Struct, frozen=True, kw_only=True, tag="tool_call", tag_field="part_delta_kind"
):
    """A fragment of a tool call: name, arguments or ID."""

    tool_name_delta: str | None = None
    """More of the tool's name."""
    args_delta: str | dict[str, Any] | None = None
    """More argument JSON text, or a complete arguments object."""
    tool_call_id: str | None = None
    """The call's ID once known."""


PartDelta: TypeAlias = TextPartDelta | ThinkingPartDelta | ToolCallPartDelta
"""A change to one response part."""


class PartStartEvent(msgspec.Struct, frozen=True, tag="part_start", tag_field="event_kind"):
    """A new response part begins at `index`."""

    index: int
    """The part's index in the response; every event for the part uses it."""
    part: ModelResponsePart
    """The part as first seen (may be partial)."""


# Not tracked by the garbage collector: a read of a long stream makes hundreds at once. The event is
# frozen, so only a tool-call delta's arguments dict, changed afterwards to hold it, could close a cycle.
class PartDeltaEvent(msgspec.Struct, frozen=True, gc=False, tag="part_delta", tag_field="event_kind"):
    """A response part grows."""

    index: int
    """The part's index."""
    delta: PartDelta
    """What was added."""


class PartEndEvent(msgspec.Struct, frozen=True, tag="part_end", tag_field="event_kind"):
    """A response part is complete."""

    index: int
    """The part's index."""
    part: ModelResponsePart
    """The complete part."""


class ResponseCompleted(msgspec.Struct, frozen=True, tag="response_completed", tag_field="event_kind"):
    """The last event of a successful stream: the complete response."""

    response: ModelResponse
    """The complete answer, including complete tool calls, usage and finish reason."""


ModelStreamEvent: TypeAlias = PartStartEvent | PartDeltaEvent | PartEndEvent | ResponseCompleted
"""An event of a model stream."""


_PART_EVENTS = frozenset((PartStartEvent, PartDeltaEvent, PartEndEvent))
"""The stream events that are not a `ResponseCompleted`, by exact type."""


class Model(abc.ABC):
    """Base class of every model client.

    Subclasses provide `model_name`, `provider_name`, `profile` and `_stream`; they may override
    `_request` to use a buffered endpoint. Callers use [`stream`][ferrule.core.model.Model.stream]
    and [`request`][ferrule.core.model.Model.request], which enforce the contract.
    """

    settings: ModelSettings | None = None
    """Model-level default settings, the first layer of the merge."""

    @property
    @abc.abstractmethod
    def model_name(self) -> str:
        """The model's name, e.g. `"gpt-5-mini"`."""

    @property
    @abc.abstractmethod
    def provider_name(self) -> str:
        """The provider's name, e.g. `"openai"`."""

    @property
    @abc.abstractmethod
    def profile(self) -> ModelProfile:
        """What this model supports."""

    @property
    def system(self) -> str:
        """`provider:model`, for messages and telemetry."""
        return f"{self.provider_name}:{self.model_name}"

    @property
    def redactor(self) -> Redactor | None:
        """What every error leaving `request` and `stream` is scrubbed with; `None` for none.

        A client on a [`Provider`][ferrule.core.provider.Provider] returns the provider's, so that
        errors its codec builds from in-band error bodies and stream events never show a credential.
        """
        return None

    def check(self, call: ModelCall) -> None:
        """Raise `UnsupportedFeatureError` if `call` asks for something the profile lacks."""
        self.profile.check(call, model=self.system)

    def stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        """Stream one request. Checks the call before any I/O; see the module docs for the invariants."""
        self.check(call)
        return self._checked_stream(call)

    async def _checked_stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        completed = False
        stream = self._stream(call)
        try:
            async for event in stream:
                if completed:
                    raise self._broken("produced an event after its completed response")
                if isinstance(event, ResponseCompleted):
                    completed = True
                yield event
        except Exception as exc:
            self._scrub(exc)
            raise
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if not completed:
            raise self._broken("ended without a completed response")

    def stream_batches(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]]:
        """[`stream`][ferrule.core.model.Model.stream] in non-empty lists of events: the same check
        before any I/O, the same events in the same order and the same errors, for a layer that
        hands every event on (an agent's streamed run). A model streamed event by event (no
        `_stream_batches`) gives one event a list."""
        self.check(call)
        return self._checked_batches(call)

    async def _checked_batches(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]]:
        """`_checked_stream` a list at a time; a list is cut where the contract breaks, so what
        precedes the violation is delivered before its error, as event by event."""
        completed = False
        batches = self._stream_batches(call)
        single = batches is None
        source: AsyncIterator[Any] = self._stream(call) if batches is None else batches
        try:
            async for item in source:
                batch: list[ModelStreamEvent] = [item] if single else item
                if completed:
                    raise self._broken("produced an event after its completed response")
                # Most lists of a read hold only part events (exactly those types): checked in C,
                # not per event.
                if single or not _PART_EVENTS.issuperset(map(type, batch)):
                    for index, event in enumerate(batch):
                        if isinstance(event, ResponseCompleted):
                            completed = True
                            if index + 1 < len(batch):
                                yield batch[: index + 1]
                                raise self._broken("produced an event after its completed response")
                yield batch
        except Exception as exc:
            self._scrub(exc)
            raise
        finally:
            aclose = getattr(source, "aclose", None)
            if aclose is not None:
                await aclose()
        if not completed:
            raise self._broken("ended without a completed response")

    def _stream_batches(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]] | None:
        """`_stream`'s events in non-empty lists (say, those of one network read), or `None` (the
        default) to be streamed event by event: a client that decodes a read at a time gives them
        whole, so that a layer above hands them on in a loop rather than a resume per event."""
        del call
        return None

    def _broken(self, what: str) -> ResponseDecodeError:
        return ResponseDecodeError(
            f"model stream {what}", provider_name=self.provider_name, model_name=self.model_name
        )

    async def request(self, call: ModelCall) -> ModelResponse:
        """Make one buffered request. Checks the call before any I/O."""
        self._check_request(call)
        try:
            return await self._request(call)
        except Exception as exc:
            self._scrub(exc)
            raise

    def _check_request(self, call: ModelCall) -> None:
        """The check `request` makes, by default `check(call)`; `_request` starts right after it,
        before any await (so a subclass may hand `_request` what it learned while checking)."""
        self.check(call)

    def _scrub(self, exc: Exception) -> None:
        redactor = self.redactor
        if redactor is not None:
            redactor.scrub(exc)

    @abc.abstractmethod
    def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        """Provider implementation: yield events, ending with one `ResponseCompleted`."""

    async def _request(self, call: ModelCall) -> ModelResponse:
        """Provider implementation of a buffered request; by default consumes `_stream`."""
        response: ModelResponse | None = None
        async for event in self._checked_stream(call):
            if isinstance(event, ResponseCompleted):
                response = event.response
        assert response is not None  # _checked_stream raises otherwise
        return response

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.system!r})"
