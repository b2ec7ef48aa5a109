"""What ferrule sees of a transport's message streams, between the transport and the SDK.

Two things the SDK's client cannot tell ferrule:

* whether the transport has ended (its read stream reached its end or a write failed): the SDK
  signals a closed connection with JSON-RPC error code -32000, the code many servers also answer
  any failure with, so the code alone does not say which happened;
* which tools of a `tools/list` page are malformed: the SDK validates the page as a whole, so one
  tool with, say, a non-object input schema would make every tool of the server disappear. Each
  page is checked here tool by tool first; a malformed tool is taken out of the page (and reported
  through `Watch.excluded`) before the SDK sees it.

Imported only when a stdio or HTTP server connects (it imports the SDK's message types).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager
from typing import Any
from typing import Final
from typing import Self
from typing import cast

import anyio
from mcp_types import JSONRPCError
from mcp_types import JSONRPCRequest
from mcp_types import JSONRPCResponse
from mcp_types import Tool
from mcp_types import methods as sdk_methods
from pydantic import ValidationError

from mcp.shared.message import SessionMessage

__all__ = ["Watch", "watched"]

_LIST = "tools/list"
_MAX_PENDING: Final = 64  # outstanding tools/list requests remembered (a listing has one at a time)
_NAME_CHARS: Final = 128
_ENDED = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)


class Watch:
    """One connection's view of its streams, filled in by the wrappers `watched` puts around them."""

    __slots__ = ("ended", "excluded", "pending", "version")

    def __init__(self) -> None:
        self.ended = False
        """The read stream ended or a write failed: the SDK now fails every request as closed."""
        self.version: str | None = None
        """The negotiated protocol version, once the handshake is done (pages are checked against it)."""
        self.excluded: list[tuple[str, str]] = []
        """`(tool name, why)` for each malformed tool taken out of a page since the toolset last looked."""
        self.pending: dict[str, None] = {}
        """Ids of the `tools/list` requests sent and not answered yet."""

    def outbound(self, message: SessionMessage) -> None:
        request = message.message
        if isinstance(request, JSONRPCRequest) and request.method == _LIST:
            if len(self.pending) >= _MAX_PENDING:
                del self.pending[next(iter(self.pending))]
            self.pending[_key(request.id)] = None

    def inbound(self, message: SessionMessage) -> SessionMessage:
        answer = message.message
        if not isinstance(answer, (JSONRPCResponse, JSONRPCError)) or not self.pending:
            return message
        key = _key(answer.id)
        if key not in self.pending:
            return message
        del self.pending[key]
        if not isinstance(answer, JSONRPCResponse):
            return message
        kept = self._check_page(answer.result)
        if kept is None:
            return message
        result = {**answer.result, "tools": kept}
        return SessionMessage(
            JSONRPCResponse(jsonrpc="2.0", id=answer.id, result=result), metadata=message.metadata
        )

    def _check_page(self, page: dict[str, Any]) -> list[Any] | None:
        """The well-formed tools of a page when some are malformed; `None` to pass it on unchanged.

        A page that fails for another reason than its tools (or a version the SDK does not know)
        is passed on as it is, for the SDK to reject.
        """
        version = self.version
        tools: Any = page.get("tools")
        if version is None or not isinstance(tools, list) or not tools:
            return None
        if _problem(page, version) is None:
            return None  # the common case: the whole page is valid
        if _problem({**page, "tools": []}, version) is not None:
            return None
        kept: list[Any] = []
        for index, tool in enumerate(cast("list[Any]", tools)):
            why = _problem({**page, "tools": [tool]}, version)
            if why is None:
                kept.append(tool)
            else:
                self.excluded.append((_name(tool, index), why))
        return kept


def _key(request_id: int | str | None) -> str:
    # The SDK correlates a response whose id echoes ours as a string ("7" for 7) too.
    return str(request_id)


def _problem(page: dict[str, Any], version: str) -> str | None:
    """Why the SDK would reject `page` as a `tools/list` result of `version`, or `None`."""
    try:
        sdk_methods.validate_server_result(_LIST, version, page)
        tools: Any = page.get("tools")
        for tool in cast("list[Any]", tools):
            Tool.model_validate(tool, by_name=False)
    except ValidationError as exc:
        return _describe(exc)
    except (KeyError, ValueError):
        return None  # a version the SDK has no surface for: it does not check it either
    return None


def _describe(exc: ValidationError) -> str:
    parts: list[str] = []
    for error in exc.errors()[:3]:
        location = [str(step) for step in error["loc"]]
        if location[:1] == ["tools"]:
            location = location[2:]  # drop `tools.<index>`: the page holds one tool
        where = ".".join(location) or "the tool"
        parts.append(f"{where}: {error['msg']}"[:200])
    more = exc.error_count() - len(parts)
    return "it is not a valid MCP tool (" + "; ".join(parts) + (f"; {more} more" if more > 0 else "") + ")"


def _name(tool: Any, index: int) -> str:
    name: Any = cast("dict[str, Any]", tool).get("name") if isinstance(tool, dict) else None
    if isinstance(name, str) and name:
        return name[:_NAME_CHARS]
    return f"#{index} of the page"


class _Stream:
    """One of the transport's streams as the SDK sees it: closing and leaving it close the inner one."""

    __slots__ = ("_inner", "_watch")

    def __init__(self, inner: Any, watch: Watch) -> None:
        self._inner = inner
        self._watch = watch

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _Read(_Stream):
    """The read stream the SDK receives from: pages checked, the end noted before the SDK sees it."""

    __slots__ = ()

    @property
    def last_context(self) -> Any:
        # The SDK reads the sender's context from the streams of its HTTP transport.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except _ENDED:
            self._watch.ended = True
            raise
        if isinstance(item, SessionMessage):
            return self._watch.inbound(item)
        return item

    def __aiter__(self) -> _Read:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _Write(_Stream):
    """The write stream the SDK sends to: `tools/list` requests noted, failed writes too."""

    __slots__ = ()

    async def send(self, item: Any) -> None:
        if isinstance(item, SessionMessage):
            self._watch.outbound(item)
        try:
            await self._inner.send(item)
        except _ENDED:
            self._watch.ended = True
            raise


@contextlib.asynccontextmanager
async def watched(
    transport: AbstractAsyncContextManager[tuple[Any, Any]], watch: Watch
) -> AsyncGenerator[tuple[Any, Any]]:
    """`transport` (yielding the SDK's `(read_stream, write_stream)`) with both streams watched."""
    async with transport as (read_stream, write_stream):
        yield _Read(read_stream, watch), _Write(write_stream, watch)
