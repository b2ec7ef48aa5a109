"""What the ASGI apps share: bounded bodies, live streams with replay, the SSE response, the run driver.

Imported only by the apps (it needs Starlette, the `ferrule-ui[server]` extra).
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from contextlib import aclosing
from typing import Any

import anyio
import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response
from starlette.types import Receive
from starlette.types import Scope
from starlette.types import Send

from ferrule.agent import Agent
from ferrule.agent import AgentStreamEvent
from ferrule.agent import Decision
from ferrule.agent import Paused
from ferrule.agent import PausedState
from ferrule.agent import StreamedRunResult
from ferrule.core.messages import Message

from ._bridge import ApprovalResponse
from ._bridge import UIBridge
from ._errors import ClientInputError
from ._errors import UIError
from ._events import CustomValue
from ._events import UIEvent
from ._limits import OnDisconnect
from ._limits import UILimits
from ._pauses import Pauses
from ._replay import ReplayBuffer
from ._sanitize import split_prompt

__all__ = [
    "CustomValues",
    "DepsFactory",
    "FollowResponse",
    "Host",
    "LiveStream",
    "OnDisconnect",
    "RunResponse",
    "Runs",
    "Segment",
    "client_error",
    "drive",
    "new_run_id",
    "read_body",
    "resolve_deps",
    "take_paused",
]

logger = logging.getLogger("ferrule.ui")

DepsFactory = Callable[[Request], Any]
"""Builds the run's dependencies from the request (sync or async)."""


def new_run_id() -> str:
    """A fresh run identity."""
    return "run-" + uuid.uuid4().hex


def client_error(error: ClientInputError) -> Response:
    """The 4xx/5xx answer to refused client input: `{"error": message}`."""
    return JSONResponse({"error": str(error)}, status_code=error.status)


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The request body, refused with `ClientInputError` when it is not JSON or longer than `max_bytes`."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise ClientInputError(
            f"expected content-type application/json, got {content_type or 'none'!r}", status=415
        )
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ClientInputError("the content-length header is not a number")
        if int(declared) > max_bytes:
            raise ClientInputError(
                f"the request body of {declared} bytes is larger than {max_bytes} (UILimits.max_body_bytes)",
                status=413,
            )
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > max_bytes:
            raise ClientInputError(
                f"the request body is larger than {max_bytes} bytes (UILimits.max_body_bytes)", status=413
            )
        chunks.append(chunk)
    return b"".join(chunks)


async def resolve_deps(factory: DepsFactory | None, request: Request) -> Any:
    """The run's dependencies: `None` without a factory."""
    if factory is None:
        return None
    deps = factory(request)
    if inspect.isawaitable(deps):
        deps = await deps
    return deps


class LiveStream:
    """The encoded records of one conversation's current run: replayable, and followable while it runs."""

    def __init__(self, buffer: ReplayBuffer) -> None:
        self.buffer = buffer
        """The records so far."""
        self.done = False
        """Whether the run has ended (no record follows)."""
        self._changed = anyio.Event()

    def append(self, record: bytes) -> None:
        """Add a record and wake the followers."""
        if record:
            self.buffer.append(record)
            self._wake()

    def close(self) -> None:
        """Mark the run ended and wake the followers."""
        self.done = True
        self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def follow(self, after: int = 0) -> AsyncGenerator[bytes]:
        """The records after sequence number `after`, then each new one, until the run ends."""
        seq = after
        while True:
            changed = self._changed
            for item in self.buffer.replay_after(seq):
                seq = item[0]
                yield item[1]
            if seq >= self.buffer.last_seq:
                if self.done:
                    return
                await changed.wait()


class Runs:
    """The conversations of one app: their live streams (bounded) and which have a run in flight."""

    def __init__(self, max_active: int, max_streams: int, replay_events: int, replay_bytes: int) -> None:
        self.max_active = max_active
        """The most runs in flight at once."""
        self.max_streams = max_streams
        """The most conversations whose last stream is kept for replay."""
        self._replay = (replay_events, replay_bytes)
        self.streams: OrderedDict[str, LiveStream] = OrderedDict()
        """The live (or last) stream of each conversation, oldest first."""
        self.active: set[str] = set()
        """Conversations with a run in flight."""

    def begin(self, key: str) -> LiveStream:
        """Reserve `key` for a new run; refused (409/503) if it has one in flight or the app is full."""
        if key in self.active:
            raise ClientInputError(
                f"a run is already streaming for {key!r}; wait for it to finish (or reconnect to it)",
                status=409,
            )
        if len(self.active) >= self.max_active:
            raise ClientInputError(
                f"the server is running {self.max_active} runs, its limit; try again shortly", status=503
            )
        self.active.add(key)
        live = LiveStream(ReplayBuffer(*self._replay))
        self.streams.pop(key, None)
        self.streams[key] = live
        if len(self.streams) > self.max_streams:
            # Forget the oldest finished streams; a stream in flight is never dropped.
            for old in [k for k in self.streams if k not in self.active][
                : len(self.streams) - self.max_streams
            ]:
                del self.streams[old]
        return live

    def end(self, key: str) -> None:
        """Release `key` after its run ended."""
        self.active.discard(key)


OpenStream = Callable[[], AbstractAsyncContextManager[StreamedRunResult[Any]]]

CustomValues = Callable[[AgentStreamEvent], Sequence[CustomValue]]
"""Application values to send after an agent event's own UI events (build them with `custom_value`)."""


async def drive(
    *,
    bridge: UIBridge,
    open_stream: OpenStream,
    encode: Callable[[UIEvent], bytes],
    live: LiveStream,
    pauses: Pauses,
    key: str,
    preamble: Sequence[UIEvent] = (),
    custom_values: CustomValues | None = None,
) -> None:
    """Run one segment, appending every encoded record to `live`; a pause is saved before it is announced."""

    def emit(events: Sequence[UIEvent]) -> None:
        for event in events:
            live.append(encode(event))

    try:
        emit(bridge.start())
        emit(preamble)
        try:
            paused: Paused | None
            async with open_stream() as stream:
                async for event in stream:
                    emit(bridge.feed(event))
                    if custom_values is not None:
                        emit(custom_values(event))
                paused = stream.paused
            if paused is not None:
                # Saved before the client hears of the pause, so its decision always finds the run.
                await pauses.paused(key, paused.state)
            emit(bridge.finish(paused))
        except Exception as exc:
            if not isinstance(exc, UIError):
                logger.exception("ferrule.ui: run %s of %s failed", bridge.run_id, key)
            emit(bridge.fail(exc))
    finally:
        live.close()


class _Streamed(Response):
    """A response whose body is streamed by `__call__`: no content-length header."""

    def __init__(self, headers: dict[str, str]) -> None:
        self.status_code = 200
        self.background = None
        self.raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


class RunResponse(_Streamed):
    """A streamed response that follows a `LiveStream` while `produce` fills it.

    When the client disconnects, `on_disconnect="cancel"` cancels the run (the agent drains its
    work); `"continue"` lets it finish into the replay buffer, where a reconnecting client finds it.
    """

    def __init__(
        self,
        *,
        headers: dict[str, str],
        live: LiveStream,
        produce: Callable[[], Awaitable[None]],
        abandon: Callable[[], Awaitable[None]],
        on_disconnect: OnDisconnect,
    ) -> None:
        super().__init__(headers)
        self._live = live
        self._produce = produce
        self._abandon = abandon
        self._on_disconnect = on_disconnect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send(
                {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
            )
        except BaseException:
            # The client left before the run started: give back what the request reserved.
            with anyio.CancelScope(shield=True):
                await self._abandon()
            raise
        shield = self._on_disconnect == "continue"
        async with anyio.create_task_group() as tg:

            async def produce() -> None:
                with anyio.CancelScope(shield=shield):
                    await self._produce()

            tg.start_soon(produce)
            follow_scope = anyio.CancelScope()
            watch_scope = anyio.CancelScope()

            async def watch() -> None:
                with watch_scope:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    follow_scope.cancel()
                    if not shield:
                        tg.cancel_scope.cancel()

            tg.start_soon(watch)
            with follow_scope:
                try:
                    async with aclosing(self._live.follow(0)) as records:
                        async for record in records:
                            await send({"type": "http.response.body", "body": record, "more_body": True})
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except OSError:  # the client went away mid-write
                    if not shield:
                        tg.cancel_scope.cancel()
            watch_scope.cancel()


class FollowResponse(_Streamed):
    """A streamed response replaying a `LiveStream` from its start and following it until it ends."""

    def __init__(self, *, headers: dict[str, str], live: LiveStream) -> None:
        super().__init__(headers)
        self._live = live

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            try:
                async with aclosing(self._live.follow(0)) as records:
                    async for record in records:
                        await send({"type": "http.response.body", "body": record, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                pass
            tg.cancel_scope.cancel()


async def take_paused(
    pauses: Pauses, runs: Runs, key: str, expected: PausedState, noun: str
) -> tuple[LiveStream, PausedState]:
    """Reserve `key` and take its paused run, which must still be `expected`; 409 otherwise."""
    live = runs.begin(key)
    try:
        taken = await pauses.take(key, expected, noun)
    except BaseException:
        runs.end(key)
        live.close()
        raise
    return live, taken


class Segment(msgspec.Struct, frozen=True):
    """One run segment ready to stream for a conversation."""

    live: LiveStream
    """The conversation's stream, reserved for this segment."""
    bridge: UIBridge
    """The bridge that turns the run's events into UI events."""
    open_stream: OpenStream
    """Opens the agent's stream (a new run, or a resumed one)."""
    preamble: Sequence[UIEvent] = ()
    """Events sent after the start, before the agent's own (a resume's `ApprovalResolved`s)."""
    restore: PausedState | None = None
    """The paused run put back if the segment never starts."""


class Host(msgspec.Struct, frozen=True, kw_only=True):
    """What one app serves with: the agent, its paused runs and live streams, and how it streams them."""

    agent: Agent[Any, Any]
    """The agent served."""
    pauses: Pauses
    """Where paused runs wait for their decisions."""
    runs: Runs
    """The conversations' live streams and runs in flight."""
    deps: DepsFactory | None
    """Builds each run's dependencies from its request."""
    limits: UILimits
    """The bounds on every input."""
    encode: Callable[[UIEvent], bytes]
    """A UI event as the protocol's record."""
    headers: dict[str, str]
    """The headers of a streamed response."""
    on_disconnect: OnDisconnect
    """What a dropped request does to its run."""
    custom_values: CustomValues | None
    """Application values sent after each agent event."""

    async def start(
        self, request: Request, key: str, history: list[Message], run_id: str, *, abandon_pause: bool = False
    ) -> Segment:
        """A new run of `history`'s last user prompt for `key`; `abandon_pause` drops an unanswered pause."""
        prompt, earlier = split_prompt(history)
        run_deps = await resolve_deps(self.deps, request)
        live = self.runs.begin(key)
        if abandon_pause:
            await self.pauses.abandon(key)
        bridge = UIBridge(key, run_id, limits=self.limits)

        def open_stream() -> Any:
            return self.agent.run_stream(prompt, message_history=earlier, deps=run_deps)

        return Segment(live, bridge, open_stream)

    async def resume(
        self,
        request: Request,
        key: str,
        state: PausedState,
        noun: str,
        approval: tuple[dict[str, Decision], Sequence[ApprovalResponse]],
        run_id: str,
        message_id: str | None = None,
    ) -> Segment:
        """`key`'s paused run (which must still be `state`, as `take_paused`) resumed with `approval`'s decisions."""
        decisions, responses = approval
        run_deps = await resolve_deps(self.deps, request)
        live, taken = await take_paused(self.pauses, self.runs, key, state, noun)
        bridge = UIBridge(
            key,
            run_id,
            message_id=message_id,
            announced_tool_calls=[c.tool_call_id for c in taken.pending] + taken.immediate_call_ids,
            limits=self.limits,
        )

        def open_stream() -> Any:
            return self.agent.resume_stream(taken, decisions, deps=run_deps)

        return Segment(
            live, bridge, open_stream, UIBridge.resolved(taken.pending, decisions, responses), taken
        )

    def endpoint(
        self, build: Callable[[Request], Awaitable[tuple[str, Segment]]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """A POST endpoint: `build` reads the request into `(key, segment)`; refused input gets a 4xx."""

        async def post(request: Request) -> Response:
            try:
                key, segment = await build(request)
            except ClientInputError as exc:
                return client_error(exc)
            except ValueError as exc:  # an invalid identity
                return client_error(ClientInputError(str(exc)))
            return self.respond(key, segment)

        return post

    def respond(self, key: str, segment: Segment) -> RunResponse:
        """The streamed response running `segment` for `key`; its `restore` is put back if it never starts."""
        live, runs, pauses = segment.live, self.runs, self.pauses

        async def produce() -> None:
            try:
                await drive(
                    bridge=segment.bridge,
                    open_stream=segment.open_stream,
                    encode=self.encode,
                    live=live,
                    pauses=pauses,
                    key=key,
                    preamble=segment.preamble,
                    custom_values=self.custom_values,
                )
            finally:
                runs.end(key)

        async def abandon() -> None:
            runs.end(key)
            live.close()
            if segment.restore is not None:  # the resume never ran: the run waits for its decision again
                await pauses.restore(key, segment.restore)

        return RunResponse(
            headers=self.headers,
            live=live,
            produce=produce,
            abandon=abandon,
            on_disconnect=self.on_disconnect,
        )
