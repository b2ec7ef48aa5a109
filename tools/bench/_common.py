"""Shared pieces of the benchmark harness: the workload's fixed inputs, the HTTP client every
framework gets, statistics and memory probes."""

from __future__ import annotations

import gc
import resource
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

import msgspec

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "API_KEY",
    "MODEL",
    "PROMPT",
    "TEXT",
    "TEXT_PIECES",
    "UI_PIECES",
    "UI_REQUEST",
    "long_history",
    "Stats",
    "Unsupported",
    "add",
    "http_client",
    "peak_rss_reset",
    "peak_rss",
    "rss",
    "settle",
    "stats",
]

MODEL = "gpt-4.1-mini"
"""A real model name, so every framework resolves its full OpenAI profile (tools, parallel calls)."""
API_KEY = "sk-bench-not-a-real-key"
PROMPT = "What is 1 + 2? Use the add tool."
TEXT = "The answer is 3."
"""The text the no-network function models answer with (the mock server's default answer too)."""
TEXT_PIECES = ("The", " answer", " is", " 3.")
UI_PIECES = TEXT_PIECES * 25
"""Workload 12's answer: 100 text deltas after the tool call, each one record to the browser."""
UI_REQUEST = msgspec.json.encode(
    {
        "id": "chat-1",
        "trigger": "submit-message",
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": PROMPT}]}],
    }
)
"""Workload 12's request: the body an AI SDK `useChat` posts for a first message."""


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def http_client() -> httpx2.AsyncClient:
    """The HTTP client every framework and the raw floor get, configured identically, so pool
    sizing is not what is measured.

    100 connections (httpx's default ceiling), all kept alive: a pool of 1,000 makes httpx2's
    connection search quadratic and the 1,000-run workload 7x slower for everyone, raw floor
    included, while a Python server on two cores gains nothing from more than a few dozen.
    """
    import httpx2

    return httpx2.AsyncClient(
        limits=httpx2.Limits(max_connections=100, max_keepalive_connections=100),
        timeout=httpx2.Timeout(120.0),
        follow_redirects=False,
    )


class Unsupported(Exception):
    """This framework has no equivalent of the workload (reported as n/a, not as a failure)."""


class Stats(msgspec.Struct, kw_only=True):
    """Median, min and max of one measurement's samples."""

    median: float
    """The median sample."""
    min: float
    """The smallest sample."""
    max: float
    """The largest sample."""
    n: int
    """How many samples."""


def stats(samples: Sequence[float]) -> Stats:
    """Summarise samples (already in the unit they are reported in)."""
    return Stats(median=statistics.median(samples), min=min(samples), max=max(samples), n=len(samples))


def settle() -> None:
    """Between repetitions: collect garbage so one repetition's garbage is not the next one's cost."""
    gc.collect()
    gc.collect()


def rss() -> int:
    """This process's resident set size in bytes."""
    import psutil  # pyright: ignore[reportMissingModuleSource] - only in the bench environment

    return psutil.Process().memory_info().rss


_hwm_resettable: list[bool] = []


def peak_rss_reset() -> None:
    """Reset the kernel's high-water mark of this process's RSS (Linux `clear_refs` 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        _hwm_resettable[:] = [True]
    except OSError:
        _hwm_resettable[:] = [False]


def peak_rss() -> int:
    """The peak RSS in bytes since `peak_rss_reset` (or since the process started where the kernel
    cannot reset it)."""
    if _hwm_resettable == [True]:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def dumps(value: Any) -> str:
    """One JSON line for the harness's pipes."""
    return msgspec.json.encode(value).decode()


def long_history(n: int) -> list[tuple[str, str]]:
    """Workload 11's conversation: `n` messages, user and assistant turns in turn, as (role, text)."""
    return [
        ("user", f"Question {i // 2}: what is {i} + {i + 1}? Explain briefly, with one example.")
        if i % 2 == 0
        else ("assistant", f"The answer to question {i // 2} is {2 * i}. For example, {i} + {i} = {2 * i}.")
        for i in range(n)
    ]
