"""MCP servers as ferrule toolsets: connection lifecycle, tool listing and calls.

The SDK is imported only inside the methods that connect; building a server object is cheap.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import math
import os
import re
from collections.abc import AsyncGenerator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
from types import CoroutineType
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any
from typing import Concatenate
from typing import Final
from typing import Literal
from typing import ParamSpec
from typing import Self
from typing import TypeAlias
from typing import TypeVar
from typing import cast

import anyio
import anyio.abc
import msgspec

from ferrule.agent import ModelRetry
from ferrule.agent import RunContext
from ferrule.agent import SideEffect
from ferrule.agent import Tool
from ferrule.agent import ToolReturn
from ferrule.agent.exceptions import ToolDefinitionError
from ferrule.agent.toolsets import AbstractToolset
from ferrule.core import json_schema
from ferrule.core.errors import UrlPolicyError
from ferrule.core.errors import UserError
from ferrule.core.model import Model
from ferrule.core.redaction import HTTP_LOGGERS
from ferrule.core.redaction import Redactor
from ferrule.core.redaction import check_credential
from ferrule.core.redaction import check_header_value
from ferrule.core.redaction import is_sensitive_param
from ferrule.core.redaction import redact_logs_of

from ._callbacks import elicitation_callback
from ._callbacks import sampling_callback
from ._callbacks import sampling_with_model
from ._errors import MCPConnectionLostError
from ._errors import MCPError
from ._errors import MCPProtocolError
from ._errors import MCPResultTooLargeError
from ._errors import MCPServerClosedError
from ._errors import MCPServerUnavailableError
from ._errors import MCPTimeoutError
from ._errors import MCPToolCallError
from ._results import result_size
from ._results import result_text
from ._results import to_tool_return
from ._types import ElicitationHandler
from ._types import EventHandler
from ._types import MCPEvent
from ._types import MCPEventKind
from ._types import MCPLimits
from ._types import SamplingHandler
from ._types import StderrPolicy

if TYPE_CHECKING:
    import httpx2

    from ferrule.core.url_policy import UrlPolicy

    from ._stdio import StdioState
    from ._watch import Watch

__all__ = [
    "ApprovalPolicy",
    "MCPServerHTTP",
    "MCPServerInProcess",
    "MCPServerStdio",
    "MCPToolInfo",
    "MCPToolset",
]

logger = logging.getLogger("ferrule.mcp")

ApprovalPolicy: TypeAlias = Callable[[RunContext[Any], str, dict[str, Any]], "bool | Awaitable[bool]"]
"""`policy(ctx, tool_name, arguments)` deciding per call whether it needs approval (server's tool name)."""

_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}\Z")
_NAMESPACE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_CONNECTION_CLOSED = -32000  # mcp_types.CONNECTION_CLOSED, without importing the SDK
# The texts of the -32000 errors the SDK makes itself: its dispatcher's closed connection, and its
# streamable-HTTP transport's response streams that ended, failed or were never opened.
_SDK_CLOSED = "Connection closed"
_SDK_STREAM_LOST = ("SSE stream ", "server answered a request with 202 Accepted")
_SAFE_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    # Windows needs these to start most programs at all.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
)


class MCPToolInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A tool as the server listed it (after filtering), and the name the model sees."""

    name: str
    """The server's name of the tool."""
    exposed_name: str
    """The name offered to the model (`namespace__name` when namespaced)."""
    description: str | None
    """The server's description (cut to `MCPLimits.max_description_chars`); untrusted text."""
    input_schema: dict[str, Any]
    """The JSON Schema of the arguments, as listed but in Draft 2020-12 (a Draft 7 or 2019-09 one is rewritten)."""
    side_effect: SideEffect
    """The side effect the tool is treated as having."""
    annotations: dict[str, Any] | None = None
    """The server's tool annotations (hints, untrusted)."""


class _Session:
    """One live connection, owned by a worker task in the toolset's task group."""

    __slots__ = (
        "alive",
        "client",
        "closed",
        "failure",
        "infos",
        "list_lock",
        "stale",
        "stop",
        "tools",
        "watch",
    )

    def __init__(self) -> None:
        self.client: Any = None
        self.alive = False
        self.failure: str | None = None
        self.stop = anyio.Event()
        self.closed = anyio.Event()
        self.list_lock = anyio.Lock()
        self.tools: list[Tool[Any]] | None = None
        self.infos: list[MCPToolInfo] = []
        self.stale = False
        self.watch: Watch | None = None
        """The view of the transport's streams, for transports ferrule opens (stdio, HTTP)."""

    def mark_dead(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
        self.alive = False
        self.stop.set()


class _Host:
    """The task group that hosts connections while the toolset is entered, and who entered it."""

    __slots__ = ("closed", "depth", "lock", "owner", "session", "tg", "unavailable", "unavailable_until")

    def __init__(self, owner: int, tg: anyio.abc.TaskGroup) -> None:
        self.owner = owner
        self.tg = tg
        self.depth: dict[int, int] = {}
        self.lock = anyio.Lock()
        self.session: _Session | None = None
        self.unavailable: MCPServerUnavailableError | None = None
        self.unavailable_until = -math.inf
        self.closed = False


def _unwrap(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        exc = exc.exceptions[0]  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return cast("BaseException", exc)


def _describe(exc: BaseException) -> str:
    exc = _unwrap(exc)
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_P = ParamSpec("_P")
_T = TypeVar("_T")
_ToolsetT = TypeVar("_ToolsetT", bound="MCPToolset")


def _scrubbed(
    method: Callable[Concatenate[_ToolsetT, _P], CoroutineType[Any, Any, _T]],
) -> Callable[Concatenate[_ToolsetT, _P], CoroutineType[Any, Any, _T]]:
    """Scrub every error leaving a toolset method of the server's credentials (see `MCPToolset._scrub`).

    The method also runs in the log-redaction scope: the SDK sends each request in the context of
    the task that made it, so that is where the HTTP client logs its response.
    """

    @functools.wraps(method)
    async def scrubbed(self: _ToolsetT, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        redactor = self.redactor
        if redactor is None:
            return await method(self, *args, **kwargs)
        try:
            with redactor.in_logs():
                return await method(self, *args, **kwargs)
        except Exception as exc:
            redactor.scrub(exc)
            raise

    return scrubbed


def _check_positive(name: str, value: float | None, *, allow_none: bool = False) -> None:
    if value is None:
        if allow_none:
            return
        raise UserError(f"{name} must be a positive number, got None")
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{name} must be a positive number of seconds, got {value!r}")


class MCPToolset(AbstractToolset[Any]):
    """One MCP server as a toolset; use `MCPServerStdio`, `MCPServerHTTP` or `MCPServerInProcess`.

    The connection is opened on first use (or on entering, with `eager=True`), shared by every
    concurrent caller, and closed when the task that entered the toolset first leaves it.
    """

    def __init__(
        self,
        *,
        id: str,
        description: str | None = None,
        required: bool = False,
        eager: bool = False,
        namespace: bool | str = False,
        allow_tools: Collection[str] | None = None,
        deny_tools: Collection[str] = (),
        requires_approval: bool | Collection[str] | ApprovalPolicy = False,
        side_effects: Mapping[str, SideEffect] | None = None,
        trust_annotations: bool = False,
        timeout: float | None = 60.0,
        connect_timeout: float = 30.0,
        max_connect_attempts: int = 3,
        reconnect_backoff: float = 0.25,
        max_reconnect_backoff: float = 5.0,
        unavailable_cooldown: float = 30.0,
        close_timeout: float = 5.0,
        limits: MCPLimits | None = None,
        cache_tools: bool = True,
        max_retries: int | None = None,
        prefer_structured: bool = True,
        sampling: SamplingHandler | Model | None = None,
        elicitation: ElicitationHandler | None = None,
        on_event: EventHandler | None = None,
        mode: Literal["auto", "legacy"] = "auto",
    ) -> None:
        if not id:
            raise UserError("an MCP server needs a non-empty id")
        _check_positive("timeout", timeout, allow_none=True)
        for name, value in (
            ("connect_timeout", connect_timeout),
            ("reconnect_backoff", reconnect_backoff),
            ("max_reconnect_backoff", max_reconnect_backoff),
            ("unavailable_cooldown", unavailable_cooldown),
            ("close_timeout", close_timeout),
        ):
            _check_positive(name, value)
        if max_connect_attempts < 1:
            raise UserError(f"max_connect_attempts must be at least 1, got {max_connect_attempts}")
        prefix = id if namespace is True else (namespace or None)
        if prefix is not None and not _NAMESPACE.match(prefix):
            raise UserError(
                f"the namespace {prefix!r} of MCP server {id!r} must be 1-64 letters, digits, '_' or '-'"
            )
        if mode not in ("auto", "legacy"):
            raise UserError(f"mode must be 'auto' or 'legacy', got {mode!r}")
        self.id = id
        self.server_id: str = id
        """The server's `id` (the same value as `id`, which the toolset protocol types as optional)."""
        self.description = description
        """What the server offers, in the application's words (shown by `MCPCapabilityProvider`)."""
        self.required = required
        """Whether an unavailable server fails the run (`True`) or its tools vanish with a warning."""
        self.eager = eager
        """Connect when the toolset is entered instead of on first use."""
        self.prefix = prefix
        """The namespace prepended as `prefix__tool`, or `None`."""
        self.allow_tools = frozenset(allow_tools) if allow_tools is not None else None
        """Only these server tool names are offered (`None`: all)."""
        self.deny_tools = frozenset(deny_tools)
        """These server tool names are never offered."""
        self.requires_approval = (
            requires_approval
            if isinstance(requires_approval, bool) or callable(requires_approval)
            else frozenset(requires_approval)
        )
        """`True` (every tool), server tool names, or a per-call `ApprovalPolicy`."""
        self.side_effects: dict[str, SideEffect] = dict(side_effects or {})
        """Side effects by server tool name; others are `non_idempotent` unless annotations are trusted."""
        self.trust_annotations = trust_annotations
        """Take the server's `readOnlyHint` / `idempotentHint` as side effects (they are claims, unverified)."""
        self.timeout = timeout
        """Seconds one tool call may take (the agent's tool timeout); `None` leaves only the run deadline."""
        self.connect_timeout = connect_timeout
        """Seconds one connection attempt (spawn, handshake) and one tool listing may take."""
        self.max_connect_attempts = max_connect_attempts
        """Connection attempts before the server counts as unavailable."""
        self.reconnect_backoff = reconnect_backoff
        """Seconds before the second attempt; doubled for each further one."""
        self.max_reconnect_backoff = max_reconnect_backoff
        """Longest wait between attempts."""
        self.unavailable_cooldown = unavailable_cooldown
        """Seconds an unavailable server is not retried (its tools stay hidden meanwhile)."""
        self.close_timeout = close_timeout
        """Seconds a graceful close may take before the connection is torn down."""
        self.limits = limits or MCPLimits()
        """Bounds on what the server may send."""
        self.cache_tools = cache_tools
        """Keep the tool list until the server says it changed (otherwise list on every step)."""
        self.max_retries = max_retries
        """Retry budget of each tool (`None`: the agent's `retries`)."""
        self.prefer_structured = prefer_structured
        """Return `structuredContent` as the result when the server sends it."""
        self.on_event = on_event
        """Called with each [`MCPEvent`][ferrule.mcp.MCPEvent] (also logged on the `ferrule.mcp` logger)."""
        self.mode = mode
        """Protocol negotiation: `auto` (2026-07-28 with fallback to the handshake) or `legacy` (handshake)."""
        self._sampling: SamplingHandler | None = (
            sampling_with_model(sampling) if isinstance(sampling, Model) else sampling
        )
        self._elicitation = elicitation
        self._host: _Host | None = None
        self.redactor: Redactor | None = None
        """What keeps the server's credentials out of errors, events and logs (`None`: it has none)."""
        self.instructions: str | None = None
        """The server's own instructions from its last handshake: untrusted, never sent to a model by ferrule."""

    # --- subclass hooks ---------------------------------------------------------------------------

    def _server(self, session: _Session) -> Any:
        """What the SDK's `Client` connects to: a transport (async context manager) or an SDK server."""
        raise NotImplementedError

    def _failure_detail(self) -> str:
        """Extra context for connection errors (e.g. the server's standard error)."""
        return ""

    def _redact(self, text: str) -> str:
        """`text` without the server's credentials (for events and log lines)."""
        return self.redactor.text(text) if self.redactor is not None else text

    def _redacted_logs(self) -> contextlib.AbstractContextManager[None]:
        """A scope in which the SDK's and the HTTP client's log records go through the redactor.

        Entered by the connection's worker task, so every task the SDK starts for it inherits it.
        """
        return self.redactor.in_logs() if self.redactor is not None else contextlib.nullcontext()

    def _scrub(self, exc: BaseException) -> None:
        """Remove the server's credentials from an error in place, and cut its chain to SDK and httpx2 errors."""
        if self.redactor is not None:
            self.redactor.scrub(exc)

    # --- lifecycle --------------------------------------------------------------------------------

    @_scrubbed
    async def __aenter__(self) -> Self:
        task = anyio.get_current_task().id
        host = self._host
        if host is None or host.closed:
            tg = anyio.create_task_group()
            await tg.__aenter__()
            host = _Host(task, tg)
            self._host = host
        host.depth[task] = host.depth.get(task, 0) + 1
        if self.eager:
            try:
                await self._acquire()
            except MCPError:
                if self.required:
                    await self.__aexit__(None, None, None)
                    raise
            except BaseException:
                await self.__aexit__(None, None, None)
                raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        host = self._host
        if host is None:
            return
        task = anyio.get_current_task().id
        count = host.depth.get(task, 0) - 1
        if count > 0:
            host.depth[task] = count
            return
        host.depth.pop(task, None)
        if task != host.owner:
            return
        # The entering task leaves: its task group must close now, whoever else still uses it.
        host.closed = True
        self._host = None
        session = host.session
        host.session = None
        if session is not None:
            session.stop.set()
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.close_timeout):
                await session.closed.wait()
        host.tg.cancel_scope.cancel()
        await host.tg.__aexit__(None, None, None)
        if session is not None:
            self._emit("closed", f"MCP server {self.server_id!r} closed")

    @property
    def is_connected(self) -> bool:
        """Whether a connection is open right now."""
        host = self._host
        return host is not None and host.session is not None and host.session.alive

    # --- events -----------------------------------------------------------------------------------

    def _emit(self, kind: MCPEventKind, message: str, tool_name: str | None = None) -> None:
        message = self._redact(message)
        level = (
            logging.WARNING if kind in ("unavailable", "connection_lost", "tool_excluded") else logging.INFO
        )
        logger.log(level, "%s", message)
        handler = self.on_event
        if handler is None:
            return
        try:
            result = handler(
                MCPEvent(server_id=self.server_id, kind=kind, message=message, tool_name=tool_name)
            )
            if inspect.isawaitable(result):
                # Events are fire-and-forget; an async handler is started on the host task group.
                host = self._host
                if host is not None and not host.closed:
                    host.tg.start_soon(_await, result)
                else:
                    cast("Any", result).close()
        except Exception:
            logger.exception("the on_event handler of MCP server %r failed", self.server_id)

    # --- connections ------------------------------------------------------------------------------

    def _require_host(self) -> _Host:
        host = self._host
        if host is None or host.closed:
            raise MCPServerClosedError(
                f"MCP server {self.server_id!r} is not open: enter it first (`async with server:`; the agent enters "
                "its toolsets for each run). If it was open, the task that entered it first has left it: "
                "enter it once around all runs that share it.",
                server_id=self.server_id,
            )
        return host

    async def _acquire(self) -> _Session:
        """The live session, connecting (single-flight, bounded attempts) when there is none."""
        host = self._require_host()
        session = host.session
        if session is not None and session.alive:
            return session
        async with host.lock:
            host = self._require_host()
            session = host.session
            if session is not None and session.alive:
                return session
            if host.unavailable is not None and anyio.current_time() < host.unavailable_until:
                raise host.unavailable
            session = await self._connect(host)
            host.session = session
            host.unavailable = None
            return session

    async def _connect(self, host: _Host) -> _Session:
        delay = self.reconnect_backoff
        reason = "no attempt was made"
        last: BaseException | None = None
        for attempt in range(1, self.max_connect_attempts + 1):
            session = _Session()
            try:
                await host.tg.start(self._run_session, session)
            except (UrlPolicyError, UserError):
                raise
            except Exception as exc:
                last = _unwrap(exc)
                reason = session.failure or _describe(exc)
                detail = self._failure_detail()
                if detail:
                    reason = f"{reason}; {detail}"
                self._emit(
                    "connect_failed",
                    f"connecting to MCP server {self.server_id!r} failed (attempt {attempt} of "
                    f"{self.max_connect_attempts}): {reason}",
                )
                if (
                    isinstance(last, (FileNotFoundError, PermissionError))
                    or attempt == self.max_connect_attempts
                ):
                    break
                await anyio.sleep(delay)
                delay = min(delay * 2, self.max_reconnect_backoff)
                continue
            self._emit("connected", f"connected to MCP server {self.server_id!r}")
            return session
        error = MCPServerUnavailableError(
            f"MCP server {self.server_id!r} is unavailable: {reason}", server_id=self.server_id
        )
        host.unavailable = error
        host.unavailable_until = anyio.current_time() + self.unavailable_cooldown
        self._emit("unavailable", str(error))
        raise error from last

    def _client(self, session: _Session) -> Any:
        from mcp_types import Implementation

        from mcp import Client

        kwargs: dict[str, Any] = {}
        if self._sampling is not None:
            kwargs["sampling_callback"] = sampling_callback(self._sampling, self.server_id)
        if self._elicitation is not None:
            kwargs["elicitation_callback"] = elicitation_callback(self._elicitation, self.server_id)

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                self._tools_changed(session)

        return Client(
            self._server(session),
            mode=self.mode,
            cache=None,
            message_handler=on_message,
            client_info=Implementation(name="ferrule", version="0.1.0"),
            **kwargs,
        )

    async def _run_session(self, session: _Session, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False
        try:
            # The scope spans the whole connection (the client's task groups live inside it), so
            # the connect timeout is its deadline until the handshake is done, then lifted.
            with (
                self._redacted_logs(),
                anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as scope,
            ):
                client = self._client(session)
                async with client:
                    scope.deadline = math.inf
                    session.client = client
                    if session.watch is not None:
                        session.watch.version = client.protocol_version
                    session.alive = True
                    self.instructions = client.instructions
                    task_status.started()
                    started = True
                    async with anyio.create_task_group() as inner:
                        if self._listens(client):
                            inner.start_soon(self._listen, session)
                        await session.stop.wait()
                        inner.cancel_scope.cancel()
            if scope.cancelled_caught and not started:
                raise TimeoutError(f"no handshake within {self.connect_timeout:g} seconds")
        except Exception as exc:
            if not started:
                raise
            session.mark_dead(_describe(exc))
            logger.debug("MCP server %r connection ended: %s", self.server_id, self._redact(_describe(exc)))
        finally:
            session.alive = False
            session.closed.set()

    def _listens(self, client: Any) -> bool:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = getattr(client.server_capabilities, "tools", None)
        return (
            client.protocol_version in MODERN_PROTOCOL_VERSIONS
            and tools is not None
            and bool(getattr(tools, "list_changed", False))
        )

    async def _listen(self, session: _Session) -> None:
        """Follow `subscriptions/listen` (2026-07-28) for tool-list changes."""
        try:
            async with session.client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._tools_changed(session)
        except Exception as exc:
            logger.debug(
                "MCP server %r: listening for tool changes stopped: %s",
                self.server_id,
                self._redact(_describe(exc)),
            )

    def _tools_changed(self, session: _Session) -> None:
        session.stale = True
        self._emit("tools_changed", f"MCP server {self.server_id!r} changed its tools; they are listed again")

    def _lost(self, session: _Session, exc: BaseException | None = None) -> MCPConnectionLostError:
        reason = session.failure or (_describe(exc) if exc is not None else "the connection closed")
        session.mark_dead(reason)
        self._emit("connection_lost", f"connection to MCP server {self.server_id!r} lost: {reason}")
        return MCPConnectionLostError(
            f"the connection to MCP server {self.server_id!r} was lost: {reason}", server_id=self.server_id
        )

    def _map_error(self, session: _Session, exc: BaseException) -> MCPError:
        """An SDK or transport failure of one request as a ferrule error."""
        from pydantic import ValidationError

        from mcp.shared.exceptions import MCPError as SdkError

        from ._http import BODY_TOO_LARGE
        from ._stdio import MALFORMED
        from ._stdio import MARKER
        from ._stdio import TOO_LARGE

        exc = _unwrap(exc)
        limit = self.limits.max_message_bytes
        if isinstance(exc, SdkError):
            data: Any = exc.error.data
            kind: Any = cast("dict[str, Any]", data).get(MARKER) if isinstance(data, dict) else None
            message = exc.error.message
            if kind == TOO_LARGE or BODY_TOO_LARGE in message or "byte limit" in message:
                return MCPResultTooLargeError(
                    f"MCP server {self.server_id!r} sent a message over the limit of {limit} bytes; it was discarded "
                    "(raise MCPLimits.max_message_bytes if the result is expected to be this large)",
                    server_id=self.server_id,
                    limit=limit,
                )
            if kind == MALFORMED:
                return MCPProtocolError(f"MCP server {self.server_id!r}: {message}", server_id=self.server_id)
            if exc.error.code == _CONNECTION_CLOSED and _closed_signal(session, exc.error):
                return self._lost(session, exc)
            if exc.error.code == -32001:  # REQUEST_TIMEOUT
                return MCPTimeoutError(f"MCP server {self.server_id!r}: {message}", server_id=self.server_id)
            text = (
                message
                if len(message) <= self.limits.max_error_chars
                else message[: self.limits.max_error_chars]
            )
            return MCPToolCallError(
                f"MCP server {self.server_id!r} answered with error {exc.error.code}: {text}",
                server_id=self.server_id,
                code=exc.error.code,
            )
        if isinstance(exc, (ValidationError, RuntimeError)):
            return MCPProtocolError(
                f"MCP server {self.server_id!r} sent a result that is not valid MCP: {_describe(exc)[:500]}",
                server_id=self.server_id,
            )
        if isinstance(exc, TimeoutError):
            return MCPTimeoutError(
                f"MCP server {self.server_id!r} did not answer in time", server_id=self.server_id
            )
        return self._lost(session, exc)

    # --- listing ----------------------------------------------------------------------------------

    async def _list(self, session: _Session) -> list[Tool[Any]]:
        if session.tools is not None and not session.stale and self.cache_tools:
            return session.tools
        async with session.list_lock:
            if session.tools is not None and not session.stale and self.cache_tools:
                return session.tools
            session.stale = False
            raw: list[Any] = []
            cursor: str | None = None
            if session.watch is not None:
                session.watch.excluded.clear()
            try:
                with anyio.fail_after(self.connect_timeout):
                    for _ in range(self.limits.max_list_pages):
                        page = await session.client.list_tools(cursor=cursor)
                        raw.extend(page.tools)
                        cursor = page.next_cursor
                        if not cursor or len(raw) > self.limits.max_tools:
                            break
            except Exception as exc:
                raise self._map_error(session, exc) from exc
            if session.watch is not None:
                self._exclude_malformed(session.watch)
            if len(raw) > self.limits.max_tools:
                self._emit(
                    "tool_excluded",
                    f"MCP server {self.server_id!r} lists more than {self.limits.max_tools} tools; the rest are excluded",
                )
                raw = raw[: self.limits.max_tools]
            session.tools, session.infos = self._build(raw, session)
            return session.tools

    def _offered(self, name: str) -> bool:
        return (self.allow_tools is None or name in self.allow_tools) and name not in self.deny_tools

    def _exclude_malformed(self, watch: Watch) -> None:
        """Report the tools the stream watcher took out of the pages (the SDK never saw them)."""
        # A page the SDK itself lists again meanwhile (to validate a call's result) reports again.
        for name, why in dict.fromkeys(watch.excluded):
            if self._offered(name):
                self._exclude(name, why)
        watch.excluded.clear()

    def _exclude(self, name: str, why: str) -> None:
        self._emit(
            "tool_excluded",
            f"MCP server {self.server_id!r}: tool {name!r} is excluded: {why}",
            tool_name=name,
        )

    def _build(self, raw: list[Any], session: _Session) -> tuple[list[Tool[Any]], list[MCPToolInfo]]:
        tools: list[Tool[Any]] = []
        infos: list[MCPToolInfo] = []
        seen: set[str] = set()
        for item in raw:
            name = item.name
            if not isinstance(name, str) or not _TOOL_NAME.match(name):
                self._exclude(str(name)[:80], "its name is not 1-128 letters, digits, '_', '-' or '.'")
                continue
            if not self._offered(name):
                continue
            if name in seen:
                self._exclude(name, "the server lists two tools with this name")
                continue
            seen.add(name)
            schema: Any = item.input_schema
            if not isinstance(schema, dict) or cast("dict[str, Any]", schema).get("type") != "object":
                self._exclude(name, "its input schema is not an object schema")
                continue
            try:
                # Draft 7 and 2019-09 schemas (what most TypeScript servers send) become their Draft
                # 2020-12 equivalent here, so the agent and the model providers see one dialect.
                schema = json_schema.to_draft_2020_12(cast("dict[str, Any]", schema))
                validator = json_schema.compile_validator(schema)
            except json_schema.JsonSchemaError as exc:
                self._exclude(name, f"its input schema is not supported ({exc})")
                continue
            annotations = (
                item.annotations.model_dump(exclude_none=True) if item.annotations is not None else None
            )
            info = MCPToolInfo(
                name=name,
                exposed_name=f"{self.prefix}__{name}" if self.prefix else name,
                description=self._description(item.description),
                input_schema=cast("dict[str, Any]", schema),
                side_effect=self._side_effect(name, annotations),
                annotations=annotations,
            )
            try:
                tools.append(self._tool(info, validator))
            except ToolDefinitionError as exc:
                self._exclude(name, str(exc))
                continue
            infos.append(info)
        return tools, infos

    def _description(self, text: str | None) -> str | None:
        if text is None:
            return None
        limit = self.limits.max_description_chars
        if len(text) <= limit:
            return text
        # The ellipsis counts: the cut text is never longer than the limit.
        return text[: limit - len(_ELLIPSIS)] + _ELLIPSIS if limit > len(_ELLIPSIS) else text[:limit]

    def _side_effect(self, name: str, annotations: dict[str, Any] | None) -> SideEffect:
        chosen = self.side_effects.get(name)
        if chosen is not None:
            return chosen
        if self.trust_annotations and annotations:
            if annotations.get("read_only_hint"):
                return "read_only"
            if annotations.get("idempotent_hint"):
                return "idempotent"
        return "non_idempotent"

    def _approval(self, name: str) -> Any:
        policy = self.requires_approval
        if isinstance(policy, bool):
            return policy
        if isinstance(policy, frozenset):
            return name in policy
        chosen = policy

        def predicate(ctx: RunContext[Any], args: Any) -> bool | Awaitable[bool]:
            return chosen(ctx, name, cast("dict[str, Any]", args))

        return predicate

    def _tool(self, info: MCPToolInfo, validator: Any) -> Tool[Any]:
        del validator  # the schema was checked when the tools were listed; the tool compiles its own
        name = info.name
        side_effect = info.side_effect

        async def invoke(ctx: RunContext[Any], args: dict[str, Any]) -> Any:
            return await self._invoke(name, info.exposed_name, side_effect, args)

        return Tool.from_schema(
            invoke,
            name=info.exposed_name,
            description=info.description or "",
            parameters_json_schema=dict(info.input_schema),
            timeout=self.timeout,
            side_effect=side_effect,
            requires_approval=self._approval(name),
            max_retries=self.max_retries,
            metadata={"mcp_server": self.server_id, "mcp_tool": name},
            origin="mcp",
        )

    # --- calls ------------------------------------------------------------------------------------

    @_scrubbed
    async def _request(self, name: str, arguments: dict[str, Any]) -> Any:
        session = await self._acquire()
        try:
            result = await session.client.call_tool(name, arguments)
        except Exception as exc:
            raise self._map_error(session, exc) from exc
        limit = self.limits.max_message_bytes
        if result_size(result) > limit:
            raise MCPResultTooLargeError(
                f"MCP server {self.server_id!r} returned a result over the limit of {limit} bytes",
                server_id=self.server_id,
                limit=limit,
            )
        return result

    @_scrubbed
    async def _invoke(
        self, name: str, exposed: str, side_effect: SideEffect, arguments: dict[str, Any]
    ) -> Any:
        try:
            result = await self._request(name, arguments)
        except MCPServerUnavailableError:
            if self.required:
                raise
            raise ModelRetry(
                f"Tool {exposed!r} is unavailable right now (its MCP server cannot be reached); do not rely on it."
            ) from None
        except MCPResultTooLargeError as exc:
            return self._ran_but(exposed, side_effect, f"its result exceeded the limit of {exc.limit} bytes")
        except (MCPConnectionLostError, MCPProtocolError, MCPTimeoutError) as exc:
            return self._unknown(exposed, side_effect, exc)
        except MCPToolCallError as exc:
            raise ModelRetry(f"The call was rejected: {exc}") from None
        if result.is_error:
            text = result_text(result, self.limits.max_error_chars)
            raise ModelRetry(text or f"Tool {exposed!r} reported an error without a message.")
        try:
            return to_tool_return(result, server_id=self.server_id, prefer_structured=self.prefer_structured)
        except MCPProtocolError as exc:
            self._scrub(exc)
            return self._unknown(exposed, side_effect, exc)

    @staticmethod
    def _ran_but(exposed: str, side_effect: SideEffect, reason: str) -> Any:
        if side_effect == "non_idempotent":
            return f"Tool {exposed!r} ran, but {reason}. Do not call it again for the same purpose."
        raise ModelRetry(f"Tool {exposed!r} ran, but {reason}; call it so that it returns less.")

    @staticmethod
    def _unknown(exposed: str, side_effect: SideEffect, exc: MCPError) -> Any:
        if side_effect == "non_idempotent":
            return ToolReturn(
                return_value=(
                    f"Tool {exposed!r} failed while running ({exc}). Its outcome is unknown: it may or may not have "
                    "taken effect. Do not assume it succeeded, and do not call it again without checking its effect first."
                ),
                metadata={"ferrule_outcome": "unknown", "mcp_error": type(exc).__name__},
            )
        raise ModelRetry(f"Tool {exposed!r} failed ({exc}); you may call it again.")

    # --- public API -------------------------------------------------------------------------------

    @_scrubbed
    async def get_tools(self, ctx: RunContext[Any]) -> Sequence[Tool[Any]]:
        """The server's tools for the next step; `[]` (with an event) when an optional server is unavailable."""
        for attempt in range(2):
            try:
                session = await self._acquire()
                return await self._list(session)
            except MCPConnectionLostError:
                if attempt == 0:
                    continue
                if self.required:
                    raise
                return []
            except (
                MCPServerUnavailableError,
                MCPProtocolError,
                MCPTimeoutError,
                MCPToolCallError,
                MCPResultTooLargeError,
            ):
                if self.required:
                    raise
                return []
        return []  # pragma: no cover

    @_scrubbed
    async def list_tools(self) -> list[MCPToolInfo]:
        """The server's tools as offered (after allow/deny lists and schema checks); connects if needed."""
        session = await self._acquire()
        await self._list(session)
        return list(session.infos)

    @_scrubbed
    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call a tool by its server name, outside any agent run, and return the raw SDK `CallToolResult`.

        Raises `MCPTimeoutError` after `timeout` seconds and the other `MCPError`s as they happen;
        `is_error` results are returned, not raised.
        """
        timeout = self.timeout
        try:
            with anyio.fail_after(timeout) if timeout is not None else contextlib.nullcontext():
                return await self._request(name, dict(arguments or {}))
        except TimeoutError:
            raise MCPTimeoutError(
                f"MCP server {self.server_id!r}: tool {name!r} did not finish within {timeout:g} seconds",
                server_id=self.server_id,
            ) from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.server_id!r})"


_ELLIPSIS = "..."


def _closed_signal(session: _Session, error: Any) -> bool:
    """Whether a -32000 error is the SDK's own signal that the connection (or the call's response) is gone.

    -32000 is also the first implementation-defined server-error code of JSON-RPC, which many
    servers answer any failure with; such an answer leaves the connection as it was. The SDK raises
    its signal only once the transport has ended (seen by the stream watcher: the read stream's end
    or a failed write) or the connection is being closed. Its streamable-HTTP transport also makes
    -32000 errors of its own, for one request whose response stream broke; they come through the
    streams like a server's answer and are known by their text. Without a watcher (in-process
    servers) the dispatcher's text tells.
    """
    watch = session.watch
    if (watch is not None and watch.ended) or not session.alive or session.stop.is_set():
        return True
    if error.data is not None:
        return False
    message: str = error.message
    if watch is not None:
        return message.startswith(_SDK_STREAM_LOST)
    return message == _SDK_CLOSED


async def _await(awaitable: Awaitable[Any]) -> None:
    try:
        await awaitable
    except Exception:
        logger.exception("an async on_event handler failed")


# --- transports ------------------------------------------------------------------------------------


def build_env(env: Mapping[str, str] | None, inherit_env: bool | Collection[str]) -> dict[str, str]:
    """The environment of a stdio server: a minimal safe set, the names in `inherit_env`, then `env`."""
    if inherit_env is True:
        base = dict(os.environ)
    else:
        names: list[str] = list(_SAFE_ENV)
        if inherit_env is not False:
            names.extend(inherit_env)
        base = {name: os.environ[name] for name in names if name in os.environ}
    base.update(env or {})
    return base


_SECRET_NAME_PARTS: Final = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def _is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential (`GITHUB_TOKEN`, `API_KEY`)."""
    upper = name.upper()
    return any(part in upper for part in _SECRET_NAME_PARTS)


class MCPServerStdio(MCPToolset):
    """An MCP server run as a child process speaking JSON-RPC over its stdin and stdout.

    The child gets an explicit environment: `PATH`, `HOME`, locale and temp-dir variables, the
    names in `inherit_env` (or everything with `inherit_env=True`), then `env`. Secrets in this
    process's environment are not passed on unless asked for. The values of the child's variables
    whose names say they hold a credential (containing `KEY`, `TOKEN`, `SECRET`, `PASSWORD`,
    `PASSWD`, `CREDENTIAL` or `AUTH`) are redacted from errors, events, logs and `stderr_tail`.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        id: str | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool | Collection[str] = False,
        cwd: str | os.PathLike[str] | None = None,
        stderr: StderrPolicy = "capture",
        shutdown_timeout: float = 2.0,
        kill_timeout: float = 2.0,
        **options: Any,
    ) -> None:
        if not command:
            raise UserError("MCPServerStdio needs a command")
        if stderr not in ("inherit", "discard", "capture"):
            raise UserError(f"stderr must be 'inherit', 'discard' or 'capture', got {stderr!r}")
        _check_positive("shutdown_timeout", shutdown_timeout)
        _check_positive("kill_timeout", kill_timeout)
        self.command = command
        """The executable."""
        self.args = list(args)
        """Its arguments."""
        self.env = dict(env or {})
        """Variables set for the child (over the safe base set)."""
        self.inherit_env = inherit_env if isinstance(inherit_env, bool) else tuple(inherit_env)
        """`True` to pass this process's whole environment, or names of variables to pass on."""
        self.cwd = os.fspath(cwd) if cwd is not None else None
        """The child's working directory."""
        self.stderr: StderrPolicy = stderr
        """What happens to the child's standard error."""
        self.shutdown_timeout = shutdown_timeout
        """Seconds the child may take to exit after its stdin closes, before SIGTERM."""
        self.kill_timeout = kill_timeout
        """Seconds between SIGTERM and SIGKILL."""
        self._state: StdioState | None = None
        super().__init__(id=id or _command_id(command, self.args), **options)
        secrets = [
            value for name, value in build_env(self.env, self.inherit_env).items() if _is_secret_name(name)
        ]
        if secrets:
            # A server that fails often prints its configuration; its credentials stay out of
            # errors, events, logs and `stderr_tail`.
            self.redactor = Redactor(secrets)

    @property
    def pid(self) -> int | None:
        """The PID of the current (or last) child process."""
        return self._state.pid if self._state is not None else None

    @property
    def returncode(self) -> int | None:
        """The exit status of the last child once it was reaped."""
        return self._state.returncode if self._state is not None else None

    @property
    def stderr_tail(self) -> str:
        """The most recent standard error of the child (with `stderr="capture"`)."""
        return self._redact(self._state.stderr.text()) if self._state is not None else ""

    def _server(self, session: _Session) -> Any:
        from ._stdio import StdioState
        from ._stdio import open_stdio
        from ._watch import Watch
        from ._watch import watched

        state = StdioState(self.limits.max_stderr_bytes)
        self._state = state
        session.watch = Watch()
        return watched(
            open_stdio(
                command=self.command,
                args=self.args,
                env=build_env(self.env, self.inherit_env),
                cwd=self.cwd,
                stderr=self.stderr,
                limits=self.limits,
                state=state,
                grace=self.shutdown_timeout,
                kill_after=self.kill_timeout,
                on_failure=session.mark_dead,
            ),
            session.watch,
        )

    def _failure_detail(self) -> str:
        tail = self.stderr_tail.strip()
        if not tail:
            return ""
        return "its standard error ended with: " + tail[-500:]

    def __repr__(self) -> str:
        return f"MCPServerStdio(id={self.server_id!r}, command={self.command!r}, args={self.args!r})"


def _command_id(command: str, args: list[str]) -> str:
    base = os.path.basename(command)
    if base.startswith("python") and len(args) >= 2 and args[0] == "-m":
        base = args[1]
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", base).strip("_")
    return cleaned[:64] or "mcp"


class MCPServerHTTP(MCPToolset):
    """An MCP server reached over streamable HTTP.

    The URL is checked against `url_policy` (HTTPS to public hosts by default; allow a local server
    with `UrlPolicy.local("http://127.0.0.1:8000")`) when the object is built and on every request.
    Headers and the bearer token are sent on every request and never shown in reprs, logs or errors.
    """

    def __init__(
        self,
        url: str,
        *,
        id: str | None = None,
        headers: Mapping[str, str] | None = None,
        bearer_token: str | None = None,
        auth: httpx2.Auth | None = None,
        url_policy: UrlPolicy | None = None,
        read_timeout: float = 300.0,
        http_transport: httpx2.AsyncBaseTransport | None = None,
        **options: Any,
    ) -> None:
        # Imported here: the URL policy module loads httpx2, which `import ferrule.mcp` should not pay for.
        from ferrule.core.url_policy import UrlPolicy

        self.url_policy = url_policy or UrlPolicy()
        """The URL policy checked before connecting and on every request."""
        parsed = self.url_policy.check(url)
        self.url = url
        """The endpoint."""
        secret_headers = dict(headers or {})
        for name, value in secret_headers.items():
            check_header_value(name, value)
        if bearer_token is not None:
            check_credential(bearer_token, "the bearer token")
            secret_headers["Authorization"] = f"Bearer {bearer_token}"
        self._headers = secret_headers
        self._auth = auth
        self._transport = http_transport
        _check_positive("read_timeout", read_timeout)
        self.read_timeout = read_timeout
        """Seconds without data before a response stream counts as dead."""
        default_id = re.sub(r"[^A-Za-z0-9_-]+", "_", parsed.host or "mcp").strip("_")[:64] or "mcp"
        super().__init__(id=id or default_id, **options)
        # Every header value is secret here (`header_names` shows only names), and so is a
        # credential-like query parameter of the URL.
        query_secrets = [v for k, v in parsed.params.multi_items() if is_sensitive_param(k)]
        self.redactor = Redactor([*secret_headers.values(), *query_secrets])

    @property
    def header_names(self) -> list[str]:
        """The names of the headers sent (their values are secret)."""
        return sorted(self._headers)

    def _server(self, session: _Session) -> Any:
        from mcp.client.streamable_http import streamable_http_client

        from ._http import make_http_client
        from ._watch import Watch
        from ._watch import watched

        self.url_policy.check(self.url)
        # At DEBUG the SDK logs every message and httpcore2 every response header; a server may echo
        # the token in either. The SDK's modules are loaded by now, so their loggers exist.
        sdk_loggers = [name for name in logging.root.manager.loggerDict if name.split(".", 1)[0] == "mcp"]
        redact_logs_of([*HTTP_LOGGERS, *sdk_loggers])
        client = make_http_client(
            policy=self.url_policy,
            headers=self._headers,
            auth=self._auth,
            limit=self.limits.max_message_bytes,
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            transport=self._transport,
        )

        @contextlib.asynccontextmanager
        async def transport() -> AsyncGenerator[Any]:
            async with (
                client,
                streamable_http_client(
                    self.url, http_client=client, max_sse_event_size=self.limits.max_message_bytes
                ) as streams,
            ):
                yield streams

        session.watch = Watch()
        return watched(transport(), session.watch)

    def __repr__(self) -> str:
        from ferrule.core.url_policy import redact_url

        return f"MCPServerHTTP(id={self.server_id!r}, url={redact_url(self.url)!r}, headers={self.header_names!r})"


class MCPServerInProcess(MCPToolset):
    """An MCP server object of the SDK (`mcp.server.mcpserver.MCPServer` or a low-level `Server`) in this process.

    No subprocess and no sockets: the SDK dispatches requests directly (or over in-memory streams
    with `mode="legacy"`, which sampling and elicitation need).
    """

    def __init__(self, server: Any, *, id: str | None = None, **options: Any) -> None:
        self.server = server
        """The SDK server object."""
        name = getattr(server, "name", None)
        default_id = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:64] if isinstance(name, str) else ""
        super().__init__(id=id or default_id or "in_process", **options)

    def _server(self, session: _Session) -> Any:
        return self.server
