from __future__ import annotations

from decimal import Decimal

import msgspec
import pytest

from ferrule.core.usage import RequestUsage
from ferrule.core.usage import RunUsage
from ferrule.core.usage import UsageLimitExceeded
from ferrule.core.usage import UsageLimits


def test_request_usage_adds_inclusive_counters() -> None:
    a = RequestUsage(input_tokens=10, cache_read_tokens=4, output_tokens=3, details={"reasoning_tokens": 2})
    b = RequestUsage(
        input_tokens=1, output_tokens=1, details={"reasoning_tokens": 1, "x": 5}, cost=Decimal("0.1")
    )
    total = a + b
    assert total.input_tokens == 11
    assert total.cache_read_tokens == 4
    assert total.details == {"reasoning_tokens": 3, "x": 5}
    assert total.reasoning_tokens == 3
    assert total.cost is None  # unknown stays unknown
    assert total.total_tokens == 15


def test_unknown_cache_reporting_propagates() -> None:
    assert not (RequestUsage(cache_reported=False) + RequestUsage()).cache_reported


def test_run_usage_accumulates_requests() -> None:
    run = RunUsage()
    run.incr(RequestUsage(input_tokens=3, output_tokens=4, details={"reasoning_tokens": 1}))
    run.incr(RequestUsage(input_tokens=1, output_tokens=1))
    assert (run.input_tokens, run.output_tokens, run.reasoning_tokens) == (4, 5, 1)
    combined = run + RunUsage(requests=2, tool_calls=1, cost_nano_usd=5)
    assert combined.requests == 2
    assert combined.tool_calls == 1
    assert combined.cost_nano_usd is None


def test_usage_serializes_compactly() -> None:
    assert msgspec.json.encode(RequestUsage(input_tokens=2)) == b'{"input_tokens":2}'


def test_request_limit_at_and_past_the_limit() -> None:
    limits = UsageLimits(request_limit=2)
    limits.check_before_request(RunUsage(requests=1))  # the 2nd request is allowed
    with pytest.raises(UsageLimitExceeded, match="request_limit of 2 exceeded"):
        limits.check_before_request(RunUsage(requests=2))


@pytest.mark.parametrize(
    ("field", "usage"),
    [
        ("input_tokens_limit", RunUsage(input_tokens=11)),
        ("output_tokens_limit", RunUsage(output_tokens=11)),
        ("total_tokens_limit", RunUsage(input_tokens=6, output_tokens=6)),
        ("tool_calls_limit", RunUsage(tool_calls=11)),
        ("cost_limit_nano_usd", RunUsage(cost_nano_usd=11)),
    ],
)
def test_token_limits_at_and_past(field: str, usage: RunUsage) -> None:
    limits = UsageLimits(**{field: 10})
    at = msgspec.structs.replace(
        usage,
        **{
            k: (10 if getattr(usage, k) else getattr(usage, k))
            for k in ("output_tokens", "tool_calls", "cost_nano_usd")
        },
    )
    if field in ("input_tokens_limit",):
        at = RunUsage(input_tokens=10)
    if field == "total_tokens_limit":
        at = RunUsage(input_tokens=5, output_tokens=5)
    limits.check_tokens(at)
    with pytest.raises(UsageLimitExceeded) as info:
        limits.check_tokens(usage)
    assert info.value.limit == field
