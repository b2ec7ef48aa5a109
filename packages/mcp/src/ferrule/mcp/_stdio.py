"""The stdio transport: an MCP server as a child process, read with bounds and always reaped.

The SDK's own stdio client buffers each stdout line whole and logs malformed ones; this transport
keeps at most `max_message_bytes` of one line, answers the request an oversized or malformed line
belonged to with an error (when its `id` can be found), and treats output it cannot attribute as
a broken connection. It spawns the server with an explicit environment in its own process group
and shuts it down by closing stdin, waiting, then SIGTERM and SIGKILL to the group, then reaping.

Imported only when a stdio server connects (it imports the SDK's message types).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import msgspec
from mcp_types import INTERNAL_ERROR
from mcp_types import ErrorData
from mcp_types import JSONRPCError
from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError

from ferrule.core import bounded_json
from mcp.shared.message import SessionMessage

from ._types import MCPLimits
from ._types import StderrPolicy

__all__ = ["StdioState", "find_request_id", "open_stdio"]

logger = logging.getLogger("ferrule.mcp")

_PREFIX_BYTES = 64 * 1024
_SUFFIX_BYTES = 1024
_EXIT_POLL = 0.01
_KILL_REAP_TIMEOUT = 2.0

TOO_LARGE = "too_large"
MALFORMED = "malformed"
MARKER = "ferrule_mcp"
"""Key of `ErrorData.data` in the errors this transport synthesizes for a request."""


class StdioState:
    """What the toolset can see of the child: its PID, its fate and its captured standard error."""

    __slots__ = ("failure", "pid", "returncode", "stderr")

    def __init__(self, stderr_limit: int) -> None:
        self.pid: int | None = None
        """The child's process ID once it started."""
        self.returncode: int | None = None
        """Its exit status once it was reaped."""
        self.failure: str | None = None
        """Why the connection ended on the server's side, when it did."""
        self.stderr = _Tail(stderr_limit)
        """The most recent bytes of its standard error (with `stderr="capture"`)."""


class _Tail:
    """The last `limit` bytes written to a stream."""

    __slots__ = ("_buf", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data
        excess = len(self._buf) - self.limit
        if excess > 0:
            del self._buf[:excess]

    def text(self) -> str:
        return self._buf.decode("utf-8", "replace")


# One JSON token: a complete string, a structural character, or a bare literal/number.
_TOKEN = re.compile(rb'\s*(?:("(?:[^"\\]|\\.)*")|([{}\[\]:,])|([^\s{}\[\]:,"]+))', re.DOTALL)
_INT = re.compile(rb"-?(?:0|[1-9][0-9]*)\Z")
# `..., "id": 7}` (optionally followed by `"jsonrpc": "2.0"`) at the very end of a message.
_TRAILING_ID = re.compile(
    rb'[,{]\s*"id"\s*:\s*(-?(?:0|[1-9][0-9]*)|"(?:[^"\\]|\\.)*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*\Z',
    re.DOTALL,
)


def _id_value(token: bytes) -> int | str | None:
    if token.startswith(b'"'):
        try:
            value = msgspec.json.decode(token)
        except msgspec.DecodeError:
            return None
        return value if isinstance(value, str) else None
    if _INT.match(token):
        return int(token)
    return None


def _leading_members(data: bytes) -> tuple[int | str | None, bool]:
    """The top-level `id` of a JSON object whose beginning is `data`, and whether a `method` key appears."""
    pos = 0
    depth = 0
    last = b""  # the last structural character seen at depth 1
    key: bytes | None = None
    want_value = False
    found_id: int | str | None = None
    has_method = False
    while True:
        match = _TOKEN.match(data, pos)
        if match is None or match.end() == pos:
            return found_id, has_method
        pos = match.end()
        string, punct, bare = match.group(1), match.group(2), match.group(3)
        if want_value:
            want_value = False
            if key == b'"id"':
                token = string if string is not None else bare
                found_id = _id_value(token) if token is not None else None
            elif key == b'"method"':
                has_method = True
            if found_id is not None and has_method:
                return found_id, has_method
        if punct is not None:
            if punct in b"{[":
                if depth == 0 and punct != b"{":
                    return found_id, has_method
                depth += 1
            elif punct in b"}]":
                depth -= 1
                if depth <= 0:
                    return found_id, has_method
            elif punct == b":" and depth == 1:
                want_value = True
            if depth == 1:
                last = punct
            continue
        if string is not None and depth == 1 and last in (b"{", b","):
            key = string
            last = b"key"


def find_request_id(prefix: bytes, suffix: bytes = b"") -> int | str | None:
    """The JSON-RPC `id` of a response known only by its first and last bytes, or `None`.

    Looks for a top-level `"id"` member in `prefix` (the way most servers write it, first) and
    at the very end of `suffix` (the way some JavaScript servers write it, last).
    """
    found, _ = _leading_members(prefix)
    if found is not None:
        return found
    match = _TRAILING_ID.search(suffix)
    return _id_value(match.group(1)) if match is not None else None


def _preview(data: bytes, limit: int = 80) -> str:
    text = data[:limit].decode("utf-8", "replace")
    return repr(text) + ("..." if len(data) > limit else "")


def _error_for(request_id: int | str, message: str, kind: str, **details: Any) -> SessionMessage:
    error = ErrorData(code=INTERNAL_ERROR, message=message, data={MARKER: kind, **details})
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


class _Line:
    """One stdout line being received: kept whole up to the limit, as prefix and suffix beyond it."""

    __slots__ = ("buf", "oversized", "size", "suffix")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.size = 0
        self.oversized = False
        self.suffix = bytearray()

    def feed(self, piece: bytes, limit: int) -> None:
        self.size += len(piece)
        if not self.oversized:
            if self.size <= limit:
                self.buf += piece
                return
            # Past the limit: keep only what is needed to find the request id, drop the rest.
            self.oversized = True
            self.buf += piece[: max(0, _PREFIX_BYTES - len(self.buf))]
            del self.buf[_PREFIX_BYTES:]
        self.suffix += piece[-_SUFFIX_BYTES:]
        if len(self.suffix) > _SUFFIX_BYTES:
            del self.suffix[:-_SUFFIX_BYTES]


async def _wait_exit(process: anyio.abc.Process, seconds: float) -> bool:
    # Polling returncode (not process.wait()) also reaps on trio and does not wait for pipe EOF,
    # which a grandchild holding the pipes open would delay forever.
    deadline = anyio.current_time() + seconds
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_EXIT_POLL)
    return True


def _signal_group(process: anyio.abc.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if sys.platform == "win32":  # pragma: no cover - no process groups
            if sig == signal.SIGTERM:
                process.terminate()
            else:
                process.kill()
        else:
            os.killpg(process.pid, sig)


async def _stop(process: anyio.abc.Process, grace: float, kill_after: float) -> None:
    """Close stdin, wait `grace`, SIGTERM the group, wait `kill_after`, SIGKILL, then reap."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    if not await _wait_exit(process, grace):
        _signal_group(process, signal.SIGTERM)
        if not await _wait_exit(process, kill_after):
            _signal_group(process, signal.SIGKILL)
            if not await _wait_exit(process, _KILL_REAP_TIMEOUT):  # pragma: no cover - unkillable
                logger.warning("MCP server process %d survived SIGKILL; abandoning it", process.pid)
    elif sys.platform != "win32":
        # The leader is gone; make sure nothing it started in its group outlives it.
        _signal_group(process, signal.SIGKILL)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()
    # asyncio keeps the subprocess transport open (and warns at collection) otherwise.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError, OSError):
            close()


@contextlib.asynccontextmanager
async def open_stdio(  # noqa: C901 - the reader, writer and stderr tasks are closures over one child process
    *,
    command: str,
    args: list[str],
    env: dict[str, str],
    cwd: str | None,
    stderr: StderrPolicy,
    limits: MCPLimits,
    state: StdioState,
    grace: float,
    kill_after: float,
    on_failure: Callable[[str], None],
) -> AsyncGenerator[tuple[Any, Any]]:
    """Spawn the server and yield the SDK's `(read_stream, write_stream)` pair for it."""
    stderr_arg: int | None = {"inherit": None, "discard": subprocess.DEVNULL, "capture": subprocess.PIPE}[
        stderr
    ]
    process = await anyio.open_process(
        [command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr_arg,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    state.pid = process.pid
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    max_bytes = limits.max_message_bytes
    json_limits = limits.json
    closing = False

    def fail(reason: str) -> None:
        if state.failure is None:
            state.failure = reason
        on_failure(reason)
        # Closing our end makes the SDK fail every pending request at once.
        read_send.close()

    async def deliver(message: SessionMessage) -> bool:
        try:
            await read_send.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    async def refuse(line: bytes, failure: str, answer: str) -> bool:
        """A line that is not accepted: `answer` as the error of the request it names, or, when it
        names none, `failure` ends the connection."""
        request_id = find_request_id(line[:_PREFIX_BYTES], line[-_SUFFIX_BYTES:])
        if request_id is None:
            fail(failure)
            return False
        return await deliver(_error_for(request_id, answer, MALFORMED))

    async def handle(line: bytes) -> bool:
        if not line.strip():
            return True
        try:
            bounded_json.validate(line, json_limits)
        except bounded_json.MalformedJsonError as exc:
            return await refuse(
                line,
                f"the server wrote malformed JSON to stdout ({exc.reason}): {_preview(line)}",
                f"the server sent a malformed response ({exc.reason})",
            )
        except bounded_json.JsonLimitError as exc:
            return await refuse(
                line,
                f"the server sent a message beyond the JSON limits: {exc}",
                f"the server's response was rejected: {exc}",
            )
        try:
            message = jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValidationError:
            decoded: Any = msgspec.json.decode(line)
            if isinstance(decoded, dict) and "method" not in decoded:
                request_id = decoded.get("id")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                if isinstance(request_id, (int, str)) and not isinstance(request_id, bool):
                    return await deliver(
                        _error_for(
                            request_id, "the server sent a response that is not valid JSON-RPC", MALFORMED
                        )
                    )
            # A malformed notification or request cannot be answered; the server is broken.
            fail(f"the server sent a message that is not valid JSON-RPC: {_preview(line)}")
            return False
        return await deliver(SessionMessage(message))

    async def oversized(line: _Line) -> bool:
        reason = f"the server sent a message of {line.size} bytes, more than the limit of {max_bytes} bytes"
        if _leading_members(bytes(line.buf))[1]:
            # A notification (or a request to us): nothing waits for it, so dropping it is enough.
            logger.warning("MCP server message dropped: %s", reason)
            return True
        request_id = find_request_id(bytes(line.buf), bytes(line.suffix))
        if request_id is None:
            fail(reason)
            return False
        return await deliver(_error_for(request_id, reason, TOO_LARGE, size=line.size, limit=max_bytes))

    async def reader() -> None:
        stdout = process.stdout
        assert stdout is not None
        line = _Line()
        try:
            async for chunk in stdout:
                start = 0
                while True:
                    newline = chunk.find(b"\n", start)
                    line.feed(chunk[start:] if newline < 0 else chunk[start:newline], max_bytes)
                    if newline < 0:
                        break
                    start = newline + 1
                    complete, line = line, _Line()
                    ok = await (oversized(complete) if complete.oversized else handle(bytes(complete.buf)))
                    if not ok:
                        return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass
        finally:
            # End of output: the process exited or closed stdout. Pending requests must fail now.
            if state.failure is None and not closing:
                with anyio.CancelScope(shield=True):
                    await _wait_exit(process, 0.5)
                code = process.returncode
                fail(
                    f"the server process exited with status {code}"
                    if code is not None
                    else "the server closed its standard output"
                )
            read_send.close()
            # Keep draining so a server blocked on a full stdout pipe can still exit.
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                with anyio.move_on_after(grace):
                    async for _ in stdout:
                        pass

    async def writer() -> None:
        stdin = process.stdin
        assert stdin is not None
        try:
            async with write_recv:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            fail("the server stopped reading its standard input")

    async def drain_stderr() -> None:
        stream = process.stderr
        if stream is None:
            return
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in stream:
                state.stderr.feed(chunk)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            if stderr == "capture":
                tg.start_soon(drain_stderr)
            try:
                yield read_recv, write_send
            finally:
                closing = True
                # Shutdown must complete even when the caller is cancelled, or the child leaks.
                with anyio.CancelScope(shield=True):
                    read_recv.close()
                    write_send.close()
                    await _stop(process, grace, kill_after)
                    state.returncode = process.returncode
                tg.cancel_scope.cancel()
    finally:
        if process.returncode is None:  # pragma: no cover - only when spawning the tasks failed
            with anyio.CancelScope(shield=True):
                await _stop(process, 0, kill_after)
        state.returncode = process.returncode
