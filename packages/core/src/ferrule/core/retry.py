"""Retrying model requests: full-jitter exponential backoff within a delay budget and a deadline.

A [`RetryPolicy`][ferrule.core.retry.RetryPolicy] decides which failures are retried (by
[`ErrorCategory`][ferrule.core.errors.ErrorCategory], never by status code), how long to wait
(`Retry-After` when the provider sent one, otherwise full-jitter exponential backoff) and when to
give up: after `max_retries`, when the cumulative wait of a run would pass `max_total_delay`, or
when the wait would end after the run's deadline.

[`request_with_retry`][ferrule.core.retry.request_with_retry] and
[`stream_with_retry`][ferrule.core.retry.stream_with_retry] run one logical model request under a
policy. A stream is retried only before its first event reaches the caller: once output was visible,
retrying would duplicate it, so later failures propagate unchanged.

```python
from ferrule.core.retry import RetryPolicy, request_with_retry

response = await request_with_retry(model, call, policy=RetryPolicy(max_retries=3))
```
"""

from __future__ import annotations

import math
import random
from collections.abc import AsyncGenerator
from collections.abc import AsyncIterator
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import TypeVar

import anyio
import msgspec

from ._clock import current_time
from .errors import ErrorCategory
from .errors import FerruleError
from .errors import ProviderError
from .errors import ProviderTimeoutError

if TYPE_CHECKING:
    from .messages import ModelResponse
    from .model import Model
    from .model import ModelCall
    from .model import ModelStreamEvent

__all__ = [
    "DEFAULT_RETRY_CATEGORIES",
    "NO_RETRY",
    "DeadlineExceededError",
    "RetryBudget",
    "RetryEvent",
    "RetryPolicy",
    "request_with_retry",
    "stream_with_retry",
]

DEFAULT_RETRY_CATEGORIES: frozenset[ErrorCategory] = frozenset(
    {
        ErrorCategory.RATE_LIMIT,
        ErrorCategory.SERVER,
        ErrorCategory.TIMEOUT,
        ErrorCategory.CONNECTION,
        ErrorCategory.DECODE,
    }
)
"""The categories retried by default: transient failures where the same request may succeed."""


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How one logical model request is retried after a transient provider failure."""

    max_retries: int = 2
    """Retries after the first attempt; `0` disables retrying."""
    initial_delay: float = 0.5
    """Upper bound of the first backoff, in seconds (full jitter draws uniformly below it)."""
    max_delay: float = 20.0
    """Largest upper bound of one jittered backoff, in seconds."""
    multiplier: float = 2.0
    """Growth factor of the backoff bound per retry."""
    max_total_delay: float | None = 60.0
    """Cumulative seconds a run may spend waiting between attempts; `None` means unbounded."""
    retry_on: frozenset[ErrorCategory] = DEFAULT_RETRY_CATEGORIES
    """Error categories that are retried; every other failure propagates at once."""
    honor_retry_after: bool = True
    """Wait exactly the provider's `Retry-After` when it sent one, instead of the jittered backoff."""

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"RetryPolicy.max_retries must be >= 0, got {self.max_retries}")
        for name in ("initial_delay", "max_delay", "multiplier"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"RetryPolicy.{name} must be a finite number >= 0, got {value!r}")
        if self.max_total_delay is not None and (
            not math.isfinite(self.max_total_delay) or self.max_total_delay < 0
        ):
            raise ValueError(
                f"RetryPolicy.max_total_delay must be >= 0 or None, got {self.max_total_delay!r}"
            )

    def should_retry(self, error: BaseException) -> bool:
        """Whether `error` belongs to a category this policy retries."""
        return isinstance(error, ProviderError) and error.category in self.retry_on

    def backoff_bound(self, retry_index: int) -> float:
        """The upper bound of the jittered wait before retry number `retry_index` (0-based)."""
        bound = self.initial_delay * (self.multiplier**retry_index) if self.multiplier else self.initial_delay
        return min(self.max_delay, bound)

    def delay_for(
        self, error: BaseException, retry_index: int, *, rand: Callable[[], float] = random.random
    ) -> float:
        """Seconds to wait before retry `retry_index`: `Retry-After` if honoured, else full jitter."""
        if self.honor_retry_after and isinstance(error, ProviderError) and error.retry_after is not None:
            return max(0.0, error.retry_after)
        return rand() * self.backoff_bound(retry_index)


NO_RETRY = RetryPolicy(max_retries=0)
"""A policy that never retries."""


class RetryBudget:
    """The retry wait a run has already spent; share one instance across a run's requests."""

    __slots__ = ("retries", "total_delay")

    def __init__(self) -> None:
        self.total_delay = 0.0
        """Seconds spent waiting between attempts so far."""
        self.retries = 0
        """Retries made so far."""


class RetryEvent(msgspec.Struct, frozen=True, kw_only=True):
    """What an `on_retry` observer learns before each wait: the failure and the planned delay."""

    attempt: int
    """The attempt that failed (1 for the first)."""
    delay: float
    """Seconds the policy will wait before the next attempt."""
    total_delay: float
    """Cumulative wait of the run, including this delay."""
    category: ErrorCategory
    """The category of the failure."""
    message: str
    """The failure's message (never contains credentials)."""
    request_id: str | None = None
    """The provider's request ID of the failed attempt, when it sent one."""
    retry_after: float | None = None
    """The provider's `Retry-After`, in seconds, when it sent one."""


class DeadlineExceededError(FerruleError, TimeoutError):
    """The run's absolute deadline passed during a model request; the request is not retried."""


def _note(error: BaseException, text: str) -> None:
    error.add_note(text)


class _Attempts:
    """The retry bookkeeping of one logical request."""

    __slots__ = ("budget", "deadline", "on_retry", "policy", "rand", "retry_index", "timeout")

    def __init__(
        self,
        policy: RetryPolicy,
        budget: RetryBudget | None,
        deadline: float | None,
        timeout: float | None,
        on_retry: Callable[[RetryEvent], None] | None,
        rand: Callable[[], float] | None,
    ) -> None:
        self.policy = policy
        self.budget = budget if budget is not None else RetryBudget()
        self.deadline = deadline
        self.timeout = timeout
        self.on_retry = on_retry
        self.rand = rand or random.random
        self.retry_index = 0

    def attempt_deadline(self) -> tuple[float | None, bool]:
        """The deadline of the next attempt and whether it is the attempt timeout (not the run's)."""
        if self.timeout is None:
            return self.deadline, False
        own = current_time() + self.timeout
        if self.deadline is not None and self.deadline <= own:
            return self.deadline, False
        return own, True

    async def after_failure(self, model: Model, error: ProviderError) -> None:
        """A timeout at the run deadline ends the request; any other failure may be retried."""
        if (
            isinstance(error, ProviderTimeoutError)
            and self.deadline is not None
            and current_time() >= self.deadline
        ):
            raise _deadline_passed(model) from error
        await self.wait_or_raise(error)

    async def wait_or_raise(self, error: ProviderError) -> None:
        """Sleep before the next attempt, or re-raise `error` if the policy gives up."""
        policy = self.policy
        if self.retry_index >= policy.max_retries or not policy.should_retry(error):
            raise error
        delay = policy.delay_for(error, self.retry_index, rand=self.rand)
        total = self.budget.total_delay + delay
        if policy.max_total_delay is not None and total > policy.max_total_delay:
            _note(
                error,
                f"ferrule: not retried: waiting {delay:.3g} s would exceed the run's retry budget "
                f"(RetryPolicy.max_total_delay={policy.max_total_delay:g} s)",
            )
            raise error
        if self.deadline is not None and current_time() + delay >= self.deadline:
            _note(error, f"ferrule: not retried: waiting {delay:.3g} s would pass the run deadline")
            raise error
        self.budget.total_delay = total
        self.budget.retries += 1
        self.retry_index += 1
        if self.on_retry is not None:
            self.on_retry(
                RetryEvent(
                    attempt=self.retry_index,
                    delay=delay,
                    total_delay=total,
                    category=error.category,
                    message=error.message,
                    request_id=error.request_id,
                    retry_after=error.retry_after,
                )
            )
        if delay > 0:
            await anyio.sleep(delay)


def _with_deadline(call: ModelCall, deadline: float | None) -> ModelCall:
    if deadline is None or call.deadline == deadline:
        return call
    return msgspec.structs.replace(call, deadline=deadline)


def _timed_out(model: Model, timeout: float | None) -> ProviderTimeoutError:
    return ProviderTimeoutError(
        f"model request attempt exceeded its timeout of {timeout:g} s (ModelSettings.timeout)",
        provider_name=model.provider_name,
        model_name=model.model_name,
    )


def _deadline_passed(model: Model) -> DeadlineExceededError:
    return DeadlineExceededError(f"the run deadline passed during a request to {model.system}")


async def request_with_retry(
    model: Model,
    call: ModelCall,
    *,
    policy: RetryPolicy | None = None,
    budget: RetryBudget | None = None,
    deadline: float | None = None,
    attempt_timeout: float | None = None,
    on_retry: Callable[[RetryEvent], None] | None = None,
    rand: Callable[[], float] | None = None,
) -> ModelResponse:
    """Make one buffered model request, retrying transient failures under `policy`.

    `deadline` is absolute on anyio's clock (default: `call.deadline`); `attempt_timeout` bounds
    each attempt in seconds (default: `call.settings.timeout`). An attempt that outlives its timeout fails with a
    retryable `ProviderTimeoutError`; reaching `deadline` raises
    [`DeadlineExceededError`][ferrule.core.retry.DeadlineExceededError] and is never retried.
    """
    policy = policy or NO_RETRY
    if deadline is None:
        deadline = call.deadline
    timeout = call.settings.timeout if attempt_timeout is None else attempt_timeout
    attempts: _Attempts | None = None
    if deadline is None and timeout is None:
        # The common case: no clock to watch, so no cancel scope and no bookkeeping until a failure.
        try:
            return await model.request(call)
        except ProviderError as error:
            attempts = _Attempts(policy, budget, deadline, timeout, on_retry, rand)
            await attempts.wait_or_raise(error)
    if attempts is None:
        attempts = _Attempts(policy, budget, deadline, timeout, on_retry, rand)
    while True:
        attempt_deadline, own_timeout = attempts.attempt_deadline()
        try:
            if attempt_deadline is None:
                return await model.request(call)
            with anyio.CancelScope(deadline=attempt_deadline):
                return await model.request(_with_deadline(call, attempt_deadline))
            # Only reached when the scope swallowed the cancellation at its deadline.
            raise _timed_out(model, timeout) if own_timeout else _deadline_passed(model)
        except ProviderError as error:
            await attempts.after_failure(model, error)


def stream_with_retry(
    model: Model,
    call: ModelCall,
    *,
    policy: RetryPolicy | None = None,
    budget: RetryBudget | None = None,
    deadline: float | None = None,
    attempt_timeout: float | None = None,
    on_retry: Callable[[RetryEvent], None] | None = None,
    rand: Callable[[], float] | None = None,
) -> AsyncGenerator[ModelStreamEvent]:
    """Stream one model request, retrying transient failures only before the first event escapes.

    The attempt timeout bounds the wait for the first event here and reaches the provider as the
    call's `deadline` for the rest of the stream. Once an event was yielded, a failure propagates
    unchanged: the caller may already have shown that output.
    """
    return _retried(model.stream, model, call, policy, budget, deadline, attempt_timeout, on_retry, rand)


def stream_batches_with_retry(
    model: Model,
    call: ModelCall,
    *,
    policy: RetryPolicy | None = None,
    budget: RetryBudget | None = None,
    deadline: float | None = None,
) -> AsyncGenerator[list[ModelStreamEvent]]:
    """[`stream_with_retry`][ferrule.core.retry.stream_with_retry] over `model.stream_batches`: the
    same events in non-empty lists, retried only before the first list escapes."""
    return _retried(model.stream_batches, model, call, policy, budget, deadline, None, None, None)


_ItemT = TypeVar("_ItemT")


async def _retried(
    open_stream: Callable[[ModelCall], AsyncIterator[_ItemT]],
    model: Model,
    call: ModelCall,
    policy: RetryPolicy | None,
    budget: RetryBudget | None,
    deadline: float | None,
    attempt_timeout: float | None,
    on_retry: Callable[[RetryEvent], None] | None,
    rand: Callable[[], float] | None,
) -> AsyncGenerator[_ItemT]:
    """The items of `open_stream(call)`, opened again after a failure before its first item."""
    policy = policy or NO_RETRY
    if deadline is None:
        deadline = call.deadline
    timeout = call.settings.timeout if attempt_timeout is None else attempt_timeout
    attempts = _Attempts(policy, budget, deadline, timeout, on_retry, rand)
    while True:
        attempt_deadline, own_timeout = attempts.attempt_deadline()
        stream = open_stream(_with_deadline(call, attempt_deadline))
        first: _ItemT | None = None
        try:
            if attempt_deadline is None:
                first = await stream.__anext__()
            else:
                with anyio.CancelScope(deadline=attempt_deadline):
                    first = await stream.__anext__()
                if first is None:
                    raise _timed_out(model, timeout) if own_timeout else _deadline_passed(model)
        except ProviderError as error:
            await _aclose(stream)
            await attempts.after_failure(model, error)
            continue
        except BaseException:
            await _aclose(stream)
            raise
        break

    try:
        yield first
        async for item in stream:
            yield item
    finally:
        await _aclose(stream)


async def _aclose(stream: AsyncIterator[object]) -> None:
    if getattr(stream, "ag_frame", False) is None:
        return  # an async generator that has finished: nothing left to close (or to shield)
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):
            await aclose()
