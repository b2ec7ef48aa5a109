"""Token usage, normalized per request and aggregated per run.

Totals are inclusive: `input_tokens` includes cached and audio input, `output_tokens` includes
reasoning and audio output. Counters a provider did not report stay zero; a provider that reports
no cache counters at all sets `cache_reported=False`, so an unknown cache hit rate is not mistaken
for a measured miss.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from .errors import FerruleError

__all__ = ["RequestUsage", "RunUsage", "UsageLimitExceeded", "UsageLimits"]


class _UsageBase(msgspec.Struct, kw_only=True, omit_defaults=True, repr_omit_defaults=True):
    input_tokens: int = 0
    """Input tokens, including cached and audio input."""
    cache_write_tokens: int = 0
    """Input tokens written to the provider's prompt cache (a subset of `input_tokens`)."""
    cache_read_tokens: int = 0
    """Input tokens read from the provider's prompt cache (a subset of `input_tokens`)."""
    output_tokens: int = 0
    """Output tokens, including reasoning and audio output."""
    input_audio_tokens: int = 0
    """Audio input tokens (a subset of `input_tokens`)."""
    cache_audio_read_tokens: int = 0
    """Cached audio input tokens (a subset of `cache_read_tokens`)."""
    output_audio_tokens: int = 0
    """Audio output tokens (a subset of `output_tokens`)."""
    details: dict[str, int] = msgspec.field(default_factory=dict)  # pyright: ignore[reportUnknownVariableType]
    """Provider counters that have no portable name (e.g. `reasoning_tokens`), kept by their raw names."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def reasoning_tokens(self) -> int:
        """Reasoning tokens (a subset of `output_tokens`), when the provider reported them."""
        return self.details.get("reasoning_tokens", 0)

    def _summed(self, other: _UsageBase) -> dict[str, Any]:
        """The shared counters of `self + other`, as keyword arguments of either subclass."""
        return {
            "input_tokens": self.input_tokens + other.input_tokens,
            "cache_write_tokens": self.cache_write_tokens + other.cache_write_tokens,
            "cache_read_tokens": self.cache_read_tokens + other.cache_read_tokens,
            "output_tokens": self.output_tokens + other.output_tokens,
            "input_audio_tokens": self.input_audio_tokens + other.input_audio_tokens,
            "cache_audio_read_tokens": self.cache_audio_read_tokens + other.cache_audio_read_tokens,
            "output_audio_tokens": self.output_audio_tokens + other.output_audio_tokens,
            "details": _merge_details(self.details, other.details),
        }


class RequestUsage(_UsageBase, kw_only=True):
    """Usage of one model request."""

    cache_write_1h_tokens: int = 0
    """Input tokens written to a one-hour cache (a subset of `cache_write_tokens`)."""
    output_reasoning_tokens: int = 0
    """Reasoning output tokens as a first-class counter (PydanticAI field; see also `details`)."""
    audio_seconds: float = 0.0
    """Seconds of audio processed, for providers that bill audio by time."""
    cost: Decimal | None = None
    """The provider-reported cost in USD, when the provider reports one."""
    cache_reported: bool = True
    """`False` when the provider reports no cache counters at all, so zero means unknown."""
    unmeasured_requests: int = 0
    """Responses that omitted usage (PydanticAI field): when non-zero the counters are lower bounds."""

    def __add__(self, other: RequestUsage) -> RequestUsage:
        return RequestUsage(
            **self._summed(other),
            cache_write_1h_tokens=self.cache_write_1h_tokens + other.cache_write_1h_tokens,
            output_reasoning_tokens=self.output_reasoning_tokens + other.output_reasoning_tokens,
            audio_seconds=self.audio_seconds + other.audio_seconds,
            cost=None if self.cost is None or other.cost is None else self.cost + other.cost,
            cache_reported=self.cache_reported and other.cache_reported,
            unmeasured_requests=self.unmeasured_requests + other.unmeasured_requests,
        )


class RunUsage(_UsageBase, kw_only=True):
    """Usage aggregated over an agent run: every request plus tool-call counts."""

    requests: int = 0
    """Model requests made (successful attempts)."""
    tool_calls: int = 0
    """Function tool calls executed."""
    cost_nano_usd: int | None = None
    """Exact cost in nano-USD from the pricing snapshot; `None` when any price is unknown."""

    def incr(self, usage: RequestUsage) -> None:
        """Add one request's usage in place (does not change `requests`)."""
        self.input_tokens += usage.input_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.output_tokens += usage.output_tokens
        self.input_audio_tokens += usage.input_audio_tokens
        self.cache_audio_read_tokens += usage.cache_audio_read_tokens
        self.output_audio_tokens += usage.output_audio_tokens
        if usage.details:
            self.details = _merge_details(self.details, usage.details)

    def __add__(self, other: RunUsage) -> RunUsage:
        return RunUsage(
            **self._summed(other),
            requests=self.requests + other.requests,
            tool_calls=self.tool_calls + other.tool_calls,
            cost_nano_usd=None
            if self.cost_nano_usd is None or other.cost_nano_usd is None
            else self.cost_nano_usd + other.cost_nano_usd,
        )


def _merge_details(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    if not b:
        return dict(a)
    merged = dict(a)
    for key, value in b.items():
        merged[key] = merged.get(key, 0) + value
    return merged


class UsageLimitExceeded(FerruleError):
    """A usage limit would be or was exceeded; raised before the request that would exceed it."""

    def __init__(self, limit: str, maximum: int, actual: int) -> None:
        self.limit = limit
        """The name of the limit, e.g. `"request_limit"`."""
        self.maximum = maximum
        """The configured maximum."""
        self.actual = actual
        """The value that exceeded it."""
        super().__init__(f"{limit} of {maximum} exceeded ({actual}); raise UsageLimits.{limit} to allow more")


class UsageLimits(msgspec.Struct, kw_only=True, frozen=True):
    """Limits checked before each model request and after each response."""

    request_limit: int | None = 50
    """Maximum model requests per run."""
    tool_calls_limit: int | None = None
    """Maximum function tool calls per run."""
    input_tokens_limit: int | None = None
    """Maximum input tokens per run."""
    output_tokens_limit: int | None = None
    """Maximum output tokens per run."""
    total_tokens_limit: int | None = None
    """Maximum input plus output tokens per run."""
    cost_limit_nano_usd: int | None = None
    """Maximum run cost in nano-USD (needs known prices)."""

    def check_before_request(self, usage: RunUsage) -> None:
        """Raise if one more request would exceed `request_limit`."""
        if self.request_limit is not None and usage.requests + 1 > self.request_limit:
            raise UsageLimitExceeded("request_limit", self.request_limit, usage.requests + 1)

    def check_tokens(self, usage: RunUsage) -> None:
        """Raise if token, tool-call or cost totals exceed their limits."""
        checks = (
            ("input_tokens_limit", self.input_tokens_limit, usage.input_tokens),
            ("output_tokens_limit", self.output_tokens_limit, usage.output_tokens),
            ("total_tokens_limit", self.total_tokens_limit, usage.total_tokens),
            ("tool_calls_limit", self.tool_calls_limit, usage.tool_calls),
        )
        for name, maximum, actual in checks:
            if maximum is not None and actual > maximum:
                raise UsageLimitExceeded(name, maximum, actual)
        if (
            self.cost_limit_nano_usd is not None
            and usage.cost_nano_usd is not None
            and usage.cost_nano_usd > self.cost_limit_nano_usd
        ):
            raise UsageLimitExceeded("cost_limit_nano_usd", self.cost_limit_nano_usd, usage.cost_nano_usd)
