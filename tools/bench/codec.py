"""A streamed body's decoding alone, in one process: `python -m tools.bench.codec`.

Workloads 4a to 4d time a stream end to end, where the machine's load moves the figures by more
than a change to the parser or a stream decoder makes. This times only what turns the body into
deltas, on the mock server's own bodies (the 50- and 1,000-delta answers of Chat Completions and
Responses), with nothing else running in the process: the raw floor's split and typed decode
(`fw_raw`'s own, as its runner reads a stream), against ferrule's `SseParser` and the OpenAI
stream decoders (`feed_many` for each read's events, then `finish`), with the parser's share on its
own. Both are given the body in reads of at most 64 KiB, as httpcore2 reads a socket: a body parsed
whole is one allocation of over 128 KiB, whose cost moves with the process's memory layout (by up
to half of the parser's time, with no change to the code). Prints the best of `--reps` samples (of
about 20 ms each) in µs per body, and the slope per event between the two lengths.

To compare two commits, run it with each commit's packages first on `PYTHONPATH` (see
`tools.bench.cpu`)."""

from __future__ import annotations

import argparse
import functools
import timeit
from collections.abc import Callable
from typing import Any

from ferrule.core.model import ModelStreamEvent
from ferrule.core.sse import SseParser
from ferrule.providers.openai.chat_codec import ChatStreamDecoder
from ferrule.providers.openai.responses_codec import ResponsesStreamDecoder
from tools.bench._common import MODEL
from tools.bench._common import PROMPT
from tools.bench.fw_raw import ChatStream
from tools.bench.fw_raw import ResponsesStream
from tools.bench.fw_raw import sse_payloads
from tools.bench.mock_server import render

DELTAS = (50, 1000)
_REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": (
        "chat/completions",
        {
            "model": MODEL,
            "messages": [{"role": "user", "content": PROMPT}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ),
    "responses": ("responses", {"model": MODEL, "input": PROMPT, "stream": True}),
}


def body(api: str, deltas: int) -> bytes:
    """The mock server's streamed answer of `deltas` text deltas."""
    path, request = _REQUESTS[api]
    data, streamed = render(f"/d{deltas}/v1/{path}", request)
    assert streamed
    return data


READ = 64 * 1024
"""The most bytes one network read gives (httpcore2's read size)."""


def reads(data: bytes) -> list[bytes]:
    """`data` cut into the reads a socket would give it in."""
    return [data[start : start + READ] for start in range(0, len(data), READ)]


def raw_deltas(api: str, chunks: list[bytes]) -> list[str]:
    """The floor: each read split on blank lines, its payloads read as its runner reads a stream."""
    deltas: list[str] = []
    stream = (ChatStream if api == "chat" else ResponsesStream)(deltas.append)
    buffer = b""
    for chunk in chunks:
        payloads, buffer = sse_payloads(buffer + chunk)
        stream.feed(payloads)
    return deltas


def _parse(chunks: list[bytes]) -> int:
    parser = SseParser()
    return sum(len(parser.feed(chunk)) for chunk in chunks)


def ferrule_events(api: str, chunks: list[bytes]) -> list[ModelStreamEvent]:
    """ferrule: each read through `SseParser`, its events through the API's stream decoder."""
    parser = SseParser()
    decoder = (
        ChatStreamDecoder(model_name=MODEL) if api == "chat" else ResponsesStreamDecoder(model_name=MODEL)
    )
    out: list[ModelStreamEvent] = []
    for chunk in chunks:
        decoder.feed_many(parser.feed(chunk), out)
    decoder.feed_many(parser.close(), out)
    out += decoder.finish()
    return out


def _best(fn: Callable[[], object], reps: int) -> float:
    number = max(1, round(0.02 / max(1e-7, timeit.timeit(fn, number=1))))
    return min(timeit.repeat(fn, number=number, repeat=reps)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=15, help="samples per figure (default 15)")
    args = parser.parse_args()
    for api in _REQUESTS:
        times: dict[int, tuple[float, float, float, int]] = {}
        for deltas in DELTAS:
            data = body(api, deltas)
            chunks = reads(data)
            seen = len(raw_deltas(api, chunks))
            if seen != deltas:
                raise SystemExit(f"{api}: the floor saw {seen} deltas, not {deltas}")
            events = _parse(chunks)
            raw = _best(functools.partial(raw_deltas, api, chunks), args.reps)
            sse = _best(functools.partial(_parse, chunks), args.reps)
            whole = _best(functools.partial(ferrule_events, api, chunks), args.reps)
            times[deltas] = (raw, sse, whole, events)
            print(
                f"{api:9s} {deltas:5d} deltas ({events} events, {len(data):,} bytes, {len(chunks)} reads): raw {raw:8.1f} µs, "
                f"ferrule {whole:8.1f} µs ({whole / raw:.2f}x), of which SseParser {sse:7.1f} µs",
                flush=True,
            )
        short, long = (times[n] for n in DELTAS)
        count = long[3] - short[3]
        raw_slope, sse_slope, whole_slope = ((long[i] - short[i]) / count * 1e3 for i in range(3))
        print(
            f"{api:9s} per event: raw {raw_slope:.0f} ns, ferrule {whole_slope:.0f} ns "
            f"({whole_slope / raw_slope:.2f}x), of which SseParser {sse_slope:.0f} ns",
            flush=True,
        )


if __name__ == "__main__":
    main()
