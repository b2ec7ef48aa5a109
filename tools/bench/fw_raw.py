"""The raw floor: the same exchanges as the frameworks, hand-written with one shared
`httpx2.AsyncClient` and msgspec, with no framework in between.

This is the physical limit for any framework on this machine: what the HTTP client, the JSON
codec and the event loop cost by themselves. It still does the work a run must do (build the
request from the conversation, decode the answer, run the tool, append its result, ask again,
accumulate every streamed delta), so the ratio to it is the framework's own cost.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

import msgspec

from tools.bench._common import API_KEY
from tools.bench._common import MODEL
from tools.bench._common import PROMPT
from tools.bench._common import TEXT
from tools.bench._common import TEXT_PIECES
from tools.bench._common import UI_PIECES
from tools.bench._common import UI_REQUEST
from tools.bench._common import Unsupported
from tools.bench._common import add
from tools.bench._common import http_client
from tools.bench._common import long_history

NAME = "raw"

_encode = msgspec.json.Encoder().encode
_decode_args = msgspec.json.Decoder(dict[str, int]).decode


class _UIPart(msgspec.Struct):
    type: str
    text: str = ""


class _UIMessage(msgspec.Struct):
    id: str
    role: str
    parts: list[_UIPart]


class _ChatPost(msgspec.Struct):
    id: str
    messages: list[_UIMessage]
    trigger: str = "submit-message"


_decode_chat_post = msgspec.json.Decoder(_ChatPost).decode


def _sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + _encode(chunk) + b"\n\n"


_TOOL_CHAT = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    },
}
_TOOL_RESPONSES = {"type": "function", **_TOOL_CHAT["function"]}  # type: ignore[dict-item]


# -- Chat Completions wire types ---------------------------------------------------------------


class _Fn(msgspec.Struct):
    name: str
    arguments: str


class _Call(msgspec.Struct):
    id: str
    function: _Fn


class _Message(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_Call] | None = None


class _Choice(msgspec.Struct):
    message: _Message


class _Chat(msgspec.Struct):
    choices: list[_Choice]


class _DeltaFn(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _DeltaCall(msgspec.Struct):
    index: int
    id: str | None = None
    function: _DeltaFn | None = None


class _Delta(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_DeltaCall] | None = None


class _DeltaChoice(msgspec.Struct):
    delta: _Delta


class _Chunk(msgspec.Struct):
    choices: list[_DeltaChoice]


# -- Responses wire types ----------------------------------------------------------------------


class _Content(msgspec.Struct):
    type: str
    text: str | None = None


class _Item(msgspec.Struct):
    type: str
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    content: list[_Content] | None = None


class _Response(msgspec.Struct):
    output: list[_Item]


class _Event(msgspec.Struct):
    type: str
    delta: str | None = None
    item: _Item | None = None


_decode_chat = msgspec.json.Decoder(_Chat).decode
_decode_chunk = msgspec.json.Decoder(_Chunk).decode
_decode_response = msgspec.json.Decoder(_Response).decode
_decode_event = msgspec.json.Decoder(_Event).decode

_HEADERS = {"authorization": f"Bearer {API_KEY}", "content-type": "application/json"}


def sse_payloads(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The `data:` payloads of the whole events in `buffer` (`[DONE]` left out), and what follows them."""
    *events, rest = buffer.split(b"\n\n")
    payloads: list[bytes] = []
    for event in events:
        start = event.find(b"data: ")
        if start >= 0:
            data = event[start + 6 :]
            if data != b"[DONE]":
                payloads.append(data)
    return payloads, rest


async def _sse_reads(response: Any) -> AsyncIterator[list[bytes]]:
    """The `data:` payloads of an event stream, a network read's at a time."""
    buffer = b""
    async for chunk in response.aiter_bytes():
        payloads, buffer = sse_payloads(buffer + chunk)
        if payloads:
            yield payloads


class ChatStream:
    """One streamed Chat Completions answer as the floor reads it: text pieces and tool calls."""

    def __init__(self, on_delta: Callable[[str], None] | None) -> None:
        self.pieces: list[str] = []
        self.partial: dict[int, list[str]] = {}
        self.on_delta = on_delta

    def feed(self, payloads: list[bytes]) -> None:
        """Take the payloads of one read."""
        pieces, partial, on_delta = self.pieces, self.partial, self.on_delta
        for data in payloads:
            for choice in _decode_chunk(data).choices:
                delta = choice.delta
                if delta.content:
                    pieces.append(delta.content)
                    if on_delta is not None:
                        on_delta(delta.content)
                for call in delta.tool_calls or ():
                    slot = partial.setdefault(call.index, ["", "", ""])
                    if call.id:
                        slot[0] = call.id
                    if call.function is not None:
                        if call.function.name:
                            slot[1] += call.function.name
                        if call.function.arguments:
                            slot[2] += call.function.arguments


class ResponsesStream:
    """One streamed Responses answer as the floor reads it: its finished output items."""

    def __init__(self, on_delta: Callable[[str], None] | None) -> None:
        self.output: list[_Item] = []
        self.on_delta = on_delta

    def feed(self, payloads: list[bytes]) -> None:
        """Take the payloads of one read."""
        output, on_delta = self.output, self.on_delta
        for data in payloads:
            event = _decode_event(data)
            if event.type == "response.output_text.delta" and event.delta is not None:
                if on_delta is not None:
                    on_delta(event.delta)
            elif event.type == "response.output_item.done" and event.item is not None:
                output.append(event.item)


class Bench:
    """The raw floor's side of every workload."""

    name = NAME

    def __init__(self) -> None:
        self.client = http_client()
        self.marks: list[int] = []

    async def aclose(self) -> None:
        """Close the shared client."""
        await self.client.aclose()

    # -- one exchange ----------------------------------------------------------------------------

    async def _chat(
        self, url: str, messages: list[Any], tools: bool, stream: bool, on_delta: Callable[[str], None] | None
    ) -> tuple[str | None, list[tuple[str, str, str]]]:
        body: dict[str, Any] = {"model": MODEL, "messages": messages}
        if tools:
            body["tools"] = [_TOOL_CHAT]
        if not stream:
            response = await self.client.post(url, content=_encode(body), headers=_HEADERS)
            response.raise_for_status()
            message = _decode_chat(response.content).choices[0].message
            calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ()]
            return message.content, calls
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        answer = ChatStream(on_delta)
        async with self.client.stream("POST", url, content=_encode(body), headers=_HEADERS) as response:
            response.raise_for_status()
            async for payloads in _sse_reads(response):
                answer.feed(payloads)
        calls = [(s[0], s[1], s[2]) for _, s in sorted(answer.partial.items())]
        return ("".join(answer.pieces) if answer.pieces else None), calls

    async def _responses(
        self, url: str, items: list[Any], tools: bool, stream: bool, on_delta: Callable[[str], None] | None
    ) -> tuple[str | None, list[tuple[str, str, str]]]:
        body: dict[str, Any] = {"model": MODEL, "input": items}
        if tools:
            body["tools"] = [_TOOL_RESPONSES]
        output: list[_Item] = []
        if not stream:
            response = await self.client.post(url, content=_encode(body), headers=_HEADERS)
            response.raise_for_status()
            output = _decode_response(response.content).output
        else:
            body["stream"] = True
            answer = ResponsesStream(on_delta)
            async with self.client.stream("POST", url, content=_encode(body), headers=_HEADERS) as response:
                response.raise_for_status()
                async for payloads in _sse_reads(response):
                    answer.feed(payloads)
            output = answer.output
        text: list[str] = []
        calls: list[tuple[str, str, str]] = []
        for item in output:
            if item.type == "function_call":
                calls.append((item.call_id or "", item.name or "", item.arguments or ""))
            elif item.type == "message":
                text.extend(c.text or "" for c in item.content or ())
        return ("".join(text) if text else None), calls

    async def _run(
        self,
        base: str,
        api: str,
        stream: bool,
        tools: bool = True,
        on_delta: Callable[[str], None] | None = None,
    ) -> str:
        """One agent run by hand: ask, run the requested tools, append, ask again until text."""
        if api == "chat":
            url = base + "/chat/completions"
            conversation: list[Any] = [{"role": "user", "content": PROMPT}]
            while True:
                text, calls = await self._chat(url, conversation, tools, stream, on_delta)
                if not calls:
                    return text or ""
                conversation.append(
                    {
                        "role": "assistant",
                        "content": text,
                        "tool_calls": [
                            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                            for cid, name, args in calls
                        ],
                    }
                )
                results = await _run_tools(calls, self.marks)
                conversation.extend(
                    {"role": "tool", "tool_call_id": cid, "content": str(result)}
                    for (cid, _, _), result in zip(calls, results, strict=True)
                )
        url = base + "/responses"
        conversation = [{"role": "user", "content": PROMPT}]
        while True:
            text, calls = await self._responses(url, conversation, tools, stream, on_delta)
            if not calls:
                return text or ""
            conversation.extend(
                {"type": "function_call", "call_id": cid, "name": name, "arguments": args}
                for cid, name, args in calls
            )
            results = await _run_tools(calls, self.marks)
            conversation.extend(
                {"type": "function_call_output", "call_id": cid, "output": str(result)}
                for (cid, _, _), result in zip(calls, results, strict=True)
            )

    # -- workloads ---------------------------------------------------------------------------------

    def instantiate(self, base: str) -> Callable[[], Any]:
        """Workload 10 has no floor: there is no agent object to build."""
        raise Unsupported("no agent object to build")

    def first_run(self) -> Callable[[], Awaitable[str]]:
        """Workload 10c has no floor of its own (workload 2a is the two-step run's floor)."""
        raise Unsupported("no agent object to build; 2a is the run's floor")

    def fn_run(self, stream: bool) -> Callable[[], Awaitable[str]]:
        """Workload 2's floor: the two-step loop against an in-process function, no framework."""

        async def model(conversation: list[Any]) -> dict[str, Any]:
            if conversation[-1]["role"] == "tool":
                return {"role": "assistant", "content": TEXT}
            return {"role": "assistant", "calls": [("call_1", "add", '{"a":1,"b":2}')]}

        async def model_stream(conversation: list[Any]) -> AsyncIterator[Any]:
            if conversation[-1]["role"] == "tool":
                for piece in TEXT_PIECES:
                    yield piece
            else:
                yield ("call_1", "add", '{"a":1,"b":2}')

        async def run_once() -> str:
            conversation: list[Any] = [{"role": "user", "content": PROMPT}]
            while True:
                if stream:
                    pieces: list[str] = []
                    calls: list[tuple[str, str, str]] = []
                    async for item in model_stream(conversation):
                        if isinstance(item, str):
                            pieces.append(item)
                        else:
                            calls.append(item)
                    message: dict[str, Any] = {
                        "role": "assistant",
                        "content": "".join(pieces),
                        "calls": calls,
                    }
                else:
                    message = await model(conversation)
                conversation.append(message)
                calls = message.get("calls") or []
                if not calls:
                    return message["content"]
                results = await _run_tools(calls, self.marks)
                conversation.extend(
                    {"role": "tool", "id": cid, "content": str(r)}
                    for (cid, _, _), r in zip(calls, results, strict=True)
                )

        return run_once

    def ui_stream(self) -> Callable[[], Awaitable[int]]:
        """Workload 12's floor: decode the chat post, run workload 2's streamed loop with 100 text
        pieces, and write each event as an AI SDK UI message stream record (msgspec), no framework."""

        async def model_stream(conversation: list[Any]) -> AsyncIterator[Any]:
            if conversation[-1]["role"] == "tool":
                for piece in UI_PIECES:
                    yield piece
            else:
                yield ("call_1", "add", '{"a":1,"b":2}')

        async def run_once() -> int:
            post = _decode_chat_post(UI_REQUEST)
            prompt = "".join(p.text for p in post.messages[-1].parts if p.type == "text")
            conversation: list[Any] = [{"role": "user", "content": prompt}]
            records: list[bytes] = [_sse({"type": "start", "messageId": "m-1"})]
            deltas = 0
            while True:
                records.append(_sse({"type": "start-step"}))
                calls: list[tuple[str, str, str]] = []
                text_open = False
                async for item in model_stream(conversation):
                    if isinstance(item, str):
                        if not text_open:
                            records.append(_sse({"type": "text-start", "id": "t-1"}))
                            text_open = True
                        records.append(_sse({"type": "text-delta", "id": "t-1", "delta": item}))
                        deltas += 1
                    else:
                        calls.append(item)
                        cid, name, args = item
                        records.append(
                            _sse(
                                {
                                    "type": "tool-input-available",
                                    "toolCallId": cid,
                                    "toolName": name,
                                    "input": msgspec.json.decode(args),
                                }
                            )
                        )
                if text_open:
                    records.append(_sse({"type": "text-end", "id": "t-1"}))
                if not calls:
                    records.append(_sse({"type": "finish-step"}))
                    records.append(_sse({"type": "finish"}))
                    records.append(b"data: [DONE]\n\n")
                    return deltas
                results = await _run_tools(calls, self.marks)
                for (cid, _, _), result in zip(calls, results, strict=True):
                    records.append(
                        _sse({"type": "tool-output-available", "toolCallId": cid, "output": result})
                    )
                records.append(_sse({"type": "finish-step"}))
                conversation.append({"role": "assistant", "calls": calls})
                conversation.extend(
                    {"role": "tool", "id": cid, "content": str(r)}
                    for (cid, _, _), r in zip(calls, results, strict=True)
                )

        return run_once

    def e2e(self, base: str, api: str, stream: bool) -> Callable[[], Awaitable[str]]:
        """Workloads 3, 5, 7b and 8: one tool-calling run against the mock server."""

        async def run_once() -> str:
            return await self._run(base, api, stream)

        return run_once

    def long_step(self, base: str, n: int) -> Callable[[], Awaitable[str]]:
        """Workload 11: one more step on an `n`-message history (kept as wire dicts, encoded per request)."""
        url = base + "/chat/completions"
        history: list[Any] = [{"role": role, "content": text} for role, text in long_history(n)]

        async def run_once() -> str:
            text, _calls = await self._chat(
                url, [*history, {"role": "user", "content": PROMPT}], False, False, None
            )
            return text or ""

        return run_once

    def stream_text(self, base: str, api: str) -> Callable[[], Awaitable[int]]:
        """Workload 4: one streamed text answer, every delta seen."""

        async def run_once() -> int:
            seen: list[str] = []
            await self._run(base, api, True, tools=False, on_delta=seen.append)
            return len(seen)

        return run_once

    def fn_loop(self, steps: int) -> Callable[[], Awaitable[list[int]]]:
        """Workload 7a's floor: a tool loop of `steps` steps against an in-process function."""

        async def run_once() -> list[int]:
            self.marks = []
            conversation: list[Any] = [{"role": "user", "content": PROMPT}]
            count = 0
            while True:
                count += 1
                if count > steps:
                    return self.marks
                calls = [(f"call_{count}", "add", '{"a":1,"b":2}')]
                conversation.append({"role": "assistant", "calls": calls})
                results = await _run_tools(calls, self.marks)
                conversation.extend(
                    {"role": "tool", "id": cid, "content": str(r)}
                    for (cid, _, _), r in zip(calls, results, strict=True)
                )

        return run_once

    def net_loop(self, base: str, api: str) -> Callable[[], Awaitable[list[int]]]:
        """Workload 7b: a long tool loop against the mock server."""

        async def run_once() -> list[int]:
            self.marks = []
            await self._run(base, api, False)
            return self.marks

        return run_once

    # -- history -----------------------------------------------------------------------------------

    def graph(self, shape: str, size: int) -> Callable[[], Awaitable[int]]:
        """Workload 9's floor: the same async callbacks awaited in a plain loop, or the fan-out's
        callbacks run by one `asyncio.gather` and summed."""
        import asyncio

        async def add_one(n: int) -> int:
            return n + 1

        if shape == "linear":

            async def run_linear() -> int:
                value = 0
                for _ in range(size):
                    value = await add_one(value)
                return value

            return run_linear

        async def run_fan_out() -> int:
            return sum(await asyncio.gather(*(add_one(0) for _ in range(size))))

        return run_fan_out

    def history(self, conversation: bytes) -> tuple[Any, Callable[[Any], Any]]:
        """Workload 6's floor: the same JSON through msgspec, untyped."""
        value = msgspec.json.decode(conversation)

        def round_trip(obj: Any) -> Any:
            return msgspec.json.decode(msgspec.json.encode(obj))

        return value, round_trip

    def decode_pydantic_ai(self, data: bytes) -> Callable[[], Any]:
        """Decoding a PydanticAI-written history: untyped msgspec, the floor."""
        return lambda: msgspec.json.decode(data)


async def _run_tools(calls: list[tuple[str, str, str]], marks: list[int]) -> list[int]:
    marks.append(time.perf_counter_ns())
    if len(calls) == 1:
        return [await add(**_decode_args(calls[0][2]))]
    import asyncio

    return list(await asyncio.gather(*(add(**_decode_args(args)) for _, _, args in calls)))
