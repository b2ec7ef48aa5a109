"""Durable runs: the seam through which an engine (DBOS, Temporal) checkpoints an agent run.

An engine adapter binds a run to a `StepRunner` with `bind(Binding(run_id), runner)`; inside that
block every agent run asks the runner to execute each model request, application tool call and MCP
call as one step of the engine, under a deterministic step ID. A step the engine recorded is not
executed again on replay: the runner returns the recorded JSON and the loop continues from it.

```python
from ferrule.agent.durable import Binding, bind

with bind(Binding("order-42"), runner):   # runner: an engine adapter's StepRunner
    result = await agent.run("ship order 42")
```

Step IDs are `<namespace>.step.<n>.model_request` and `<namespace>.step.<n>.tool_call.<tool call ID>`
(`step.<n>...` without a namespace), where `n` is the run step (the number of model requests made
before); a response with two tool calls of one ID is refused (`DurableRun.check_calls`), so no two
steps of a run share an ID. Graph agent nodes use the namespace `graph.<node-id>`. Workflow-origin tools
(`Tool.origin == "workflow"`: `load_capability`, `tool_search`, plan adapters) are deterministic
functions of the run and run inline on replay, outside any step; they must have no external effect.

Without `bind` nothing here runs: the loop checks one attribute per model request and tool call.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Generator
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any
from typing import Literal
from typing import Protocol
from typing import TypeAlias

import msgspec

from ferrule.core.errors import FerruleError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import CachePoint
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextContent
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserContent
from ferrule.core.messages import VideoUrl
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent

from ._errors import ModelRetry
from ._tools import Origin
from ._tools import SideEffect
from ._tools import Tool
from ._tools import ToolReturn
from ._util import duplicate_call_id

__all__ = [
    "PROCESS_TOKEN",
    "Binding",
    "CheckpointedStreamSink",
    "DurableError",
    "DurableRun",
    "InvalidDurableRecordError",
    "MemoryStreamCheckpointStore",
    "MissingWorkerRegistrationError",
    "Origin",
    "OutcomeUnknown",
    "PersistedFailureError",
    "PersistedSuspensionError",
    "RuntimeMismatchError",
    "Step",
    "StepKind",
    "StepRunner",
    "StreamCheckpointStore",
    "bind",
    "current",
    "decode_response",
    "encode_response",
    "tool_step",
    "unknown_outcome",
]

StepKind: TypeAlias = Literal["model_request", "tool_call", "mcp_request"]
"""What one durable step does (an engine may name its activities after these)."""

PROCESS_TOKEN = os.urandom(8).hex()
"""A token unique to this process: a step marker recorded by another process means a crash."""


# --- errors ------------------------------------------------------------------------------------------


class DurableError(FerruleError):
    """The family of errors of durable runs; each says what was wrong and what to do."""


class InvalidDurableRecordError(DurableError):
    """A recorded step result could not be read back (written by another version, or corrupted)."""


class MissingWorkerRegistrationError(DurableError):
    """A worker was asked to run a step for an agent, tool or model it has not registered."""


class RuntimeMismatchError(DurableError):
    """Replay asked for a different step than the one recorded: the run is not deterministic."""


class PersistedFailureError(DurableError):
    """A step recorded as failed in an earlier attempt; the run stops as it did then."""


class PersistedSuspensionError(DurableError):
    """The durable run is suspended (waiting for approval decisions); it has no result yet."""


class OutcomeUnknown(DurableError):
    """A non-idempotent tool call started in a process that crashed before its result was recorded.

    The agent records the call's outcome as unknown (like a timeout) and never runs it again.
    """


# --- binding -----------------------------------------------------------------------------------------


class Binding(msgspec.Struct, frozen=True):
    """The identity of one durable run: its run ID and the namespace of its step IDs."""

    run_id: str
    """The run's ID (the agent run uses it as its `run_id`, so replay sees the same one)."""
    step_namespace: str = ""
    """Prefix of every step ID (`graph.<node-id>` for a graph agent node); empty for a plain run."""

    def step_id(self, step: int, kind: StepKind, tool_call_id: str | None = None) -> str:
        """The deterministic ID of one step: `<namespace>.step.<n>.<kind>[.<tool call ID>]`."""
        base = f"{self.step_namespace}.step.{step}" if self.step_namespace else f"step.{step}"
        return f"{base}.{kind}" if tool_call_id is None else f"{base}.{kind}.{tool_call_id}"


class Step(msgspec.Struct, frozen=True):
    """What a `StepRunner` is asked to execute as one engine step."""

    id: str
    """The step's deterministic ID."""
    kind: StepKind
    """A model request, an application tool call or an MCP call."""
    tool_name: str | None = None
    """The tool's name (tool and MCP calls)."""
    side_effect: SideEffect = "read_only"
    """What the call does to the world; a runner must not repeat a started `non_idempotent` call."""
    call: ModelCall | None = None
    """The model call (model requests), for engines that run the step in another process."""
    tool_call_id: str | None = None
    """The call's ID (tool and MCP calls)."""
    args: str | dict[str, Any] | None = None
    """The arguments as the model sent them (tool and MCP calls), validated again where they run."""


class StepRunner(Protocol):
    """An engine adapter: executes one step at most once and returns its recorded JSON on replay."""

    async def run_step(self, step: Step, execute: Callable[[], Awaitable[str]]) -> str:
        """`await execute()` as the engine step `step` and return its JSON (recorded or fresh).

        For a `non_idempotent` step that started before a crash and has no recorded result, return
        `unknown_outcome()` instead of executing it again.
        """
        ...


class DurableRun:
    """A bound run: its `Binding` and the `StepRunner` its steps go through."""

    __slots__ = ("binding", "runner")

    def __init__(self, binding: Binding, runner: StepRunner) -> None:
        self.binding = binding
        """The run's identity."""
        self.runner = runner
        """The engine adapter."""

    def check_calls(self, step: int, calls: Sequence[ToolCallPart]) -> None:
        """Refuse a response with two tool calls of one ID: they would share one step ID.

        An engine would hand the second call the first call's recorded result, so the run stops
        here, before any tool step (and the same way when the recorded response is replayed).
        """
        call_id = duplicate_call_id(calls)
        if call_id is not None:
            raise DurableError(
                f"the model response of step {step} holds two tool calls with ID {call_id!r}; a durable "
                "run records each call under its step ID (which ends with the call ID), so the second "
                "would get the first's recorded result. Nothing of the response was executed: use a "
                "model (or provider adapter) that gives each call of a response a unique ID, or run "
                "without a durable binding"
            )

    async def model_request(
        self,
        step: int,
        call: ModelCall,
        execute: Callable[[list[ModelStreamEvent]], Awaitable[ModelResponse]],
        replay: Callable[[ModelResponse, Sequence[ModelStreamEvent]], Awaitable[None]] | None = None,
    ) -> ModelResponse:
        """One model request as a step: executed once, its response replayed afterwards.

        `execute` may collect the stream events it delivered in the list it gets; they are
        recorded with the response and handed to `replay` when the step is replayed.
        """
        executed = False

        async def run() -> str:
            nonlocal executed
            executed = True
            events: list[ModelStreamEvent] = []
            response = await execute(events)
            return msgspec.json.encode(_ModelRecord(response, events or None)).decode()

        step_info = Step(self.binding.step_id(step, "model_request"), "model_request", call=call)
        record = _decode_model(await self.runner.run_step(step_info, run))
        if not executed and replay is not None:
            await replay(record.response, record.events or ())
        return record.response

    async def tool_call(
        self, step: int, tool: Tool[Any], part: ToolCallPart, execute: Callable[[], Awaitable[Any]]
    ) -> Any:
        """One tool call as a step: its value (or its retry prompt) recorded and replayed."""
        kind: StepKind = "mcp_request" if tool.origin == "mcp" else "tool_call"
        step_info = Step(
            self.binding.step_id(step, kind, part.tool_call_id),
            kind,
            tool.name,
            tool.side_effect,
            tool_call_id=part.tool_call_id,
            args=part.args,
        )
        recorded = await self.runner.run_step(step_info, lambda: tool_step(tool.name, execute))
        return _decode_value(tool.name, recorded)


_CURRENT: contextvars.ContextVar[DurableRun | None] = contextvars.ContextVar(
    "ferrule_durable_run", default=None
)


def current() -> DurableRun | None:
    """The durable run bound in this context (`None`: runs are not durable)."""
    return _CURRENT.get()


@contextmanager
def bind(binding: Binding, runner: StepRunner) -> Generator[DurableRun]:
    """Make agent runs started in this block durable: their steps go through `runner`."""
    bound = DurableRun(binding, runner)
    token = _CURRENT.set(bound)
    try:
        yield bound
    finally:
        _CURRENT.reset(token)


# --- records -----------------------------------------------------------------------------------------


class _ModelRecord(msgspec.Struct, omit_defaults=True):
    """What one model request step records: the response, and the stream events it delivered."""

    response: ModelResponse
    events: list[ModelStreamEvent] | None = None


class _Return(msgspec.Struct, omit_defaults=True):
    """A recorded `ToolReturn`."""

    return_value: Any = None
    content: str | list[UserContent] | None = None
    metadata: Any = None


class _Record(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """What one tool step records: its value, a `ToolReturn`, a retry prompt, or an unknown outcome."""

    value: Any = None
    rich: UserContent | None = None
    tool_return: _Return | None = None
    retry: str | None = None
    unknown: bool = False


_RECORD = msgspec.json.Decoder(_Record)
_MODEL_RECORD = msgspec.json.Decoder(_ModelRecord)
_RICH = (ImageUrl, AudioUrl, VideoUrl, DocumentUrl, BinaryContent, UploadedFile, CachePoint, TextContent)


async def tool_step(tool_name: str, execute: Callable[[], Awaitable[Any]]) -> str:
    """Run one tool call and return the JSON record its step keeps (its value or retry prompt)."""
    try:
        value = await execute()
    except ModelRetry as retry:
        return msgspec.json.encode(_Record(retry=retry.message)).decode()
    return _encode_value(tool_name, value)


def unknown_outcome() -> str:
    """The record a runner returns for a non-idempotent call that started before a crash."""
    return '{"unknown":true}'


def encode_response(response: ModelResponse) -> str:
    """A model response as the JSON record a model request step keeps (an engine's activity result)."""
    return msgspec.json.encode(_ModelRecord(response)).decode()


def decode_response(recorded: str | bytes) -> ModelResponse:
    """The response of a model request step's record; `InvalidDurableRecordError` when it is not one."""
    return _decode_model(recorded).response


def _decode_model(recorded: str | bytes) -> _ModelRecord:
    try:
        return _MODEL_RECORD.decode(recorded)
    except msgspec.DecodeError as exc:
        raise InvalidDurableRecordError(
            f"a recorded model response could not be read ({exc}); the record was written by an "
            "incompatible version or changed: finish or cancel the run with the version that started it"
        ) from None


def _encode_value(tool_name: str, value: Any) -> str:
    if isinstance(value, ToolReturn):
        record = _Record(tool_return=_Return(value.return_value, _content(value.content), value.metadata))
    elif isinstance(value, _RICH):
        record = _Record(rich=value)
    else:
        record = _Record(value=value)
    try:
        return msgspec.json.encode(record).decode()
    except (TypeError, msgspec.EncodeError) as exc:
        raise DurableError(
            f"the result of tool {tool_name!r} cannot be recorded as JSON ({exc}); a durable run's "
            "tools must return msgspec-encodable data"
        ) from exc


def _content(content: Any) -> str | list[UserContent] | None:
    return content if content is None or isinstance(content, str) else list(content)


def _decode_value(tool_name: str, recorded: str | bytes) -> Any:
    try:
        record = _RECORD.decode(recorded)
    except msgspec.DecodeError as exc:
        raise InvalidDurableRecordError(
            f"the recorded result of tool {tool_name!r} could not be read ({exc}); the record was written "
            "by an incompatible version or changed: finish or cancel the run with the version that started it"
        ) from None
    if record.unknown:
        raise OutcomeUnknown(f"tool {tool_name!r} started before a crash and its outcome was not recorded")
    if record.retry is not None:
        raise ModelRetry(record.retry)
    if record.tool_return is not None:
        r = record.tool_return
        return ToolReturn(r.return_value, content=r.content, metadata=r.metadata)
    if record.rich is not None:
        return record.rich
    return record.value


# --- streams -----------------------------------------------------------------------------------------


class StreamCheckpointStore(Protocol):
    """Where a `CheckpointedStreamSink` keeps committed ordinals and delivered side-effect keys."""

    async def committed(self, checkpoint_id: str) -> int:
        """How many events of `checkpoint_id` were delivered and committed (ordinals `0..n-1`)."""
        ...

    async def commit(self, checkpoint_id: str, ordinal: int) -> None:
        """Record that event `ordinal` of `checkpoint_id` was delivered."""
        ...

    async def delivered(self, key: str) -> bool:
        """Whether the business side effect `key` was delivered."""
        ...

    async def mark_delivered(self, key: str) -> None:
        """Record that the business side effect `key` was delivered."""
        ...


class MemoryStreamCheckpointStore:
    """A `StreamCheckpointStore` in memory (tests, and one process that replays its own runs)."""

    def __init__(self) -> None:
        self.ordinals: dict[str, int] = {}
        """Committed event count per checkpoint ID."""
        self.keys: set[str] = set()
        """Delivered side-effect keys."""

    async def committed(self, checkpoint_id: str) -> int:
        """How many events of `checkpoint_id` were committed."""
        return self.ordinals.get(checkpoint_id, 0)

    async def commit(self, checkpoint_id: str, ordinal: int) -> None:
        """Record event `ordinal` as delivered."""
        self.ordinals[checkpoint_id] = max(self.ordinals.get(checkpoint_id, 0), ordinal + 1)

    async def delivered(self, key: str) -> bool:
        """Whether `key` was delivered."""
        return key in self.keys

    async def mark_delivered(self, key: str) -> None:
        """Record `key` as delivered."""
        self.keys.add(key)


class CheckpointedStreamSink:
    """An event handler that delivers each stream event of a replayed run once (at least once).

    Events get ordinals in arrival order; an ordinal committed under `checkpoint_id` before a crash
    is skipped when the run replays. The commit follows the delivery, so an event delivered just
    before a crash (before its commit) is delivered again: delivery is at least once. Use a new
    checkpoint ID (`restart`) after an approval resume or anything else that changes the order
    of events. `deliver_event(key, fn)` runs a business side effect once per key.
    """

    __slots__ = ("_committed", "_next", "checkpoint_id", "sink", "store")

    def __init__(
        self, sink: Callable[[Any], Awaitable[None]], store: StreamCheckpointStore, checkpoint_id: str
    ) -> None:
        self.sink = sink
        """Where delivered events go."""
        self.store = store
        """Where committed ordinals are kept."""
        self.checkpoint_id = checkpoint_id
        """The ordinal space events are counted in."""
        self._next = 0
        self._committed: int | None = None

    async def __call__(self, event: Any) -> None:
        """Deliver `event` unless its ordinal was committed before."""
        ordinal = self._next
        self._next += 1
        if self._committed is None:
            self._committed = await self.store.committed(self.checkpoint_id)
        if ordinal < self._committed:
            return
        await self.sink(event)
        await self.store.commit(self.checkpoint_id, ordinal)

    def restart(self, checkpoint_id: str) -> None:
        """Count events from 0 under a new checkpoint ID (after a resume or an order change)."""
        if checkpoint_id == self.checkpoint_id:
            raise DurableError(
                f"the stream checkpoint {checkpoint_id!r} is already in use; a resumed run needs a new checkpoint ID"
            )
        self.checkpoint_id = checkpoint_id
        self._next = 0
        self._committed = None

    async def deliver_event(self, key: str, fn: Callable[[], Awaitable[None]]) -> bool:
        """Run the business side effect `fn` unless `key` was delivered; whether it ran."""
        if await self.store.delivered(key):
            return False
        await fn()
        await self.store.mark_delivered(key)
        return True
