"""A deterministic OpenAI-compatible server for the benchmarks (Chat Completions and Responses).

Run as its own process: `python tools/bench/mock_server.py [--port N]`; it prints
`READY <port>` on stdout once it listens on 127.0.0.1. It is a raw asyncio HTTP/1.1 server with
keep-alive, so every framework (and the raw floor) talks to the very same bytes over the same kind
of connection, and the server's own cost stays small and equal for all of them.

What it answers is decided by the request alone, never by state kept between requests:

* the scenario comes from the path prefix, `/<scenario>/v1/chat/completions` or
  `/<scenario>/v1/responses`, so the model name stays a real one (`gpt-4.1-mini`) and every
  framework resolves its full profile. Scenario words, joined with `-`: `base` (the default),
  `d<N>` (answer text in N deltas), `loop<K>` (keep calling the tool until K results came back),
  `par<P>` (the tool-calling answer holds P parallel calls);
* a request without tools gets text; a request with tools gets a call to its first tool while it
  holds fewer tool results than the scenario's loop length (1 by default), then text. So a normal
  run is exactly two requests: a tool call, then text.
* `"stream": true` gets Server-Sent Events (chunked, keep-alive), otherwise buffered JSON.
  Chat streams end with a usage chunk when `stream_options.include_usage` asks for one.

Rendered answers are cached by everything they depend on, so after the warm-up the server only
parses the request and writes bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from typing import Any
from typing import cast

import msgspec

__all__ = ["Scenario", "main", "render", "scenario_from_path"]

MODEL = "gpt-4.1-mini"
CREATED = 1_700_000_000
_json_encode = msgspec.json.Encoder().encode
_json_decode = msgspec.json.Decoder().decode


class Scenario(msgspec.Struct, frozen=True, kw_only=True):
    """What the server answers for one path prefix."""

    deltas: int = 4
    """How many text deltas a streamed text answer has (buffered answers hold the same text)."""
    loop: int = 1
    """How many tool results a run collects before the text answer."""
    parallel: int = 1
    """How many tool calls one tool-calling answer holds."""


def scenario_from_path(path: str) -> tuple[Scenario, str]:
    """Split `/<scenario>/v1/<api>` into the scenario and the API (`chat` or `responses`)."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if len(parts) < 3 or parts[-2:] not in (["chat", "completions"], ["v1", "responses"]):
        raise ValueError(f"unknown path {path!r}")
    api = "chat" if parts[-1] == "completions" else "responses"
    words = parts[0].split("-") if parts[0] != "v1" else []
    fields: dict[str, int] = {}
    for word in words:
        if word == "base":
            continue
        for prefix, field in (("loop", "loop"), ("par", "parallel"), ("d", "deltas")):
            if word.startswith(prefix) and word[len(prefix) :].isdigit():
                fields[field] = int(word[len(prefix) :])
                break
        else:
            raise ValueError(f"unknown scenario word {word!r} in {path!r}")
    return Scenario(**fields), api


def _text_pieces(scenario: Scenario) -> list[str]:
    if scenario.deltas <= 4:
        words = ["The", " answer", " is", " 3."]
        cut = max(1, scenario.deltas - 1)
        return [*words[:cut], "".join(words[cut:])]
    return [f"w{i} " for i in range(scenario.deltas)]


def _tool_calls(name: str, step: int, count: int) -> list[tuple[str, str, str]]:
    return [(f"call_{step}_{i}", name, f'{{"a":{i + 1},"b":2}}') for i in range(count)]


def _chat_usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _render_chat(
    calls: list[tuple[str, str, str]] | None, pieces: list[str], stream: bool, usage: bool, step: int
) -> bytes:
    rid = f"chatcmpl-bench-{step}"
    if not stream:
        if calls:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                    for cid, name, args in calls
                ],
            }
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": "".join(pieces), "refusal": None}
            finish = "stop"
        body = {
            "id": rid,
            "object": "chat.completion",
            "created": CREATED,
            "model": MODEL,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": _chat_usage(20, 10),
            "system_fingerprint": "fp_bench",
        }
        return _json_encode(body)
    chunks: list[dict[str, Any]] = []

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": MODEL,
            "system_fingerprint": "fp_bench",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    if calls:
        chunks.append(chunk({"role": "assistant", "content": None, "refusal": None}))
        for index, (cid, name, args) in enumerate(calls):
            head = {
                "index": index,
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            chunks.append(chunk({"tool_calls": [head]}))
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": args}}]}))
        chunks.append(chunk({}, "tool_calls"))
    else:
        chunks.append(chunk({"role": "assistant", "content": "", "refusal": None}))
        chunks.extend(chunk({"content": piece}) for piece in pieces)
        chunks.append(chunk({}, "stop"))
    if usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = _chat_usage(20, 10)
        chunks.append(last)
    out = bytearray()
    for item in chunks:
        out += b"data: " + _json_encode(item) + b"\n\n"
    out += b"data: [DONE]\n\n"
    return bytes(out)


def _responses_envelope(rid: str, status: str, output: list[Any], usage: bool) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": 20,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 30,
        }
        if usage
        else None,
        "user": None,
        "metadata": {},
    }


def _render_responses(
    calls: list[tuple[str, str, str]] | None, pieces: list[str], stream: bool, step: int
) -> bytes:
    rid = f"resp_bench_{step}"
    msg_id = f"msg_bench_{step}"
    text = "".join(pieces)
    if calls:
        items: list[dict[str, Any]] = [
            {
                "type": "function_call",
                "id": f"fc_{cid}",
                "call_id": cid,
                "name": name,
                "arguments": args,
                "status": "completed",
            }
            for cid, name, args in calls
        ]
    else:
        items = [
            {
                "type": "message",
                "id": msg_id,
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
            }
        ]
    if not stream:
        return _json_encode(_responses_envelope(rid, "completed", items, True))
    events: list[dict[str, Any]] = []

    def event(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    event("response.created", response=_responses_envelope(rid, "in_progress", [], False))
    event("response.in_progress", response=_responses_envelope(rid, "in_progress", [], False))
    if calls:
        for index, item in enumerate(items):
            event(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            event(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=item["arguments"],
            )
            event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
            event("response.output_item.done", output_index=index, item=item)
    else:
        part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        event(
            "response.output_item.added",
            output_index=0,
            item={**items[0], "status": "in_progress", "content": []},
        )
        event("response.content_part.added", item_id=msg_id, output_index=0, content_index=0, part=part)
        for piece in pieces:
            event(
                "response.output_text.delta",
                item_id=msg_id,
                output_index=0,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        event(
            "response.output_text.done",
            item_id=msg_id,
            output_index=0,
            content_index=0,
            text=text,
            logprobs=[],
        )
        event(
            "response.content_part.done",
            item_id=msg_id,
            output_index=0,
            content_index=0,
            part={**part, "text": text},
        )
        event("response.output_item.done", output_index=0, item=items[0])
    event("response.completed", response=_responses_envelope(rid, "completed", items, True))
    out = bytearray()
    for item in events:
        out += b"event: " + item["type"].encode() + b"\ndata: " + _json_encode(item) + b"\n\n"
    return bytes(out)


def _tool_facts(api: str, body: dict[str, Any]) -> tuple[str | None, int]:
    """The first offered tool's name and how many tool results the request carries."""
    tools: list[Any] = body.get("tools") or []
    name: str | None = None
    if tools:
        first: dict[str, Any] = tools[0]
        name = first["function"]["name"] if api == "chat" else first.get("name")
    if api == "chat":
        messages: list[dict[str, Any]] = body.get("messages") or []
        return name, sum(1 for m in messages if m.get("role") == "tool")
    items: Any = body.get("input")
    if not isinstance(items, list):
        return name, 0
    entries = cast("list[Any]", items)
    return name, sum(
        1
        for m in entries
        if isinstance(m, dict) and cast("dict[str, Any]", m).get("type") == "function_call_output"
    )


_cache: dict[tuple[Any, ...], bytes] = {}


def render(path: str, body: dict[str, Any]) -> tuple[bytes, bool]:
    """The response body for one request, and whether it is an event stream."""
    scenario, api = scenario_from_path(path)
    stream = bool(body.get("stream"))
    options: dict[str, Any] = body.get("stream_options") or {}
    usage = bool(options.get("include_usage"))
    name, results = _tool_facts(api, body)
    calling = name is not None and results < scenario.loop
    # A step is counted in tool-calling answers, so call ids stay unique within a run.
    step = results // max(1, scenario.parallel)
    key = (api, scenario, stream, usage, name if calling else None, step if calling else -1)
    cached = _cache.get(key)
    if cached is None:
        calls = _tool_calls(name, step, scenario.parallel) if calling and name else None
        pieces = _text_pieces(scenario)
        if api == "chat":
            cached = _render_chat(calls, pieces, stream, usage, step)
        else:
            cached = _render_responses(calls, pieces, stream, step)
        _cache[key] = cached
    return cached, stream


def _head(status: str, content_type: str, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\nx-request-id: req_bench\r\n{extra}"
        "connection: keep-alive\r\n"
    ).encode()


def _respond(path: str, raw: bytes) -> bytes:
    try:
        body = _json_decode(raw)
        payload, stream = render(path, body)
    except Exception as exc:
        message = _json_encode({"error": {"message": f"mock server: {exc}", "type": "invalid_request_error"}})
        return (
            _head("400 Bad Request", "application/json")
            + b"content-length: %d\r\n\r\n" % len(message)
            + message
        )
    if stream:
        # One chunk holding every event: the client-side cost of parsing N events is what is
        # measured, not the server's syscall count.
        return (
            _head("200 OK", "text/event-stream; charset=utf-8", "cache-control: no-cache\r\n")
            + b"transfer-encoding: chunked\r\n\r\n"
            + b"%x\r\n" % len(payload)
            + payload
            + b"\r\n0\r\n\r\n"
        )
    return _head("200 OK", "application/json") + b"content-length: %d\r\n\r\n" % len(payload) + payload


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size_line = await reader.readline()
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path, _version = lines[0].split(" ", 2)
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if line:
                    key, _, value = line.partition(":")
                    headers[key.strip().lower()] = value.strip()
            if headers.get("transfer-encoding", "").lower() == "chunked":
                raw = await _read_chunked(reader)
            else:
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
            if method == "GET" and path == "/health":
                writer.write(_head("200 OK", "text/plain") + b"content-length: 2\r\n\r\nok")
            elif method != "POST":
                writer.write(_head("405 Method Not Allowed", "text/plain") + b"content-length: 0\r\n\r\n")
            else:
                writer.write(_respond(path, raw))
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                return
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    except asyncio.CancelledError:
        # Shutting down with connections still open (a client gave up): nothing to report.
        return
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _main(port: int) -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", port, backlog=4096, limit=64 * 1024 * 1024)
    bound = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"READY {bound}\n")
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    """Serve until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=int(os.environ.get("BENCH_MOCK_PORT", "0")))
    args = parser.parse_args(argv)
    asyncio.run(_main(args.port))


if __name__ == "__main__":
    main()
