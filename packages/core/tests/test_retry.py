"""RetryPolicy and the retrying request / stream helpers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from ferrule.core.errors import AuthenticationError
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import ProviderConnectionError
from ferrule.core.errors import ProviderError
from ferrule.core.errors import ProviderTimeoutError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ServerError
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.profile import ModelProfile
from ferrule.core.retry import DEFAULT_RETRY_CATEGORIES
from ferrule.core.retry import DeadlineExceededError
from ferrule.core.retry import RetryBudget
from ferrule.core.retry import RetryEvent
from ferrule.core.retry import RetryPolicy
from ferrule.core.retry import request_with_retry
from ferrule.core.retry import stream_with_retry
from ferrule.core.settings import ModelSettings

from ._support import FixedModel

pytestmark = pytest.mark.anyio


class Scripted(FixedModel):
    """Each attempt pops one behaviour: an exception to raise, a delay, or a text answer."""

    def __init__(self, *behaviours: object, fail_after_first_event: bool = False) -> None:
        super().__init__("scripted", profile=ModelProfile(supported_settings=frozenset({"timeout"})))
        self.behaviours = list(behaviours)
        self.attempts = 0
        self.deadlines: list[float | None] = []
        self.fail_after_first_event = fail_after_first_event

    async def _next(self, call: ModelCall) -> str:
        self.attempts += 1
        self.deadlines.append(call.deadline)
        behaviour = self.behaviours.pop(0)
        if isinstance(behaviour, BaseException):
            raise behaviour
        if isinstance(behaviour, float):
            await anyio.sleep(behaviour)
            return "slow"
        assert isinstance(behaviour, str)
        return behaviour

    async def _request(self, call: ModelCall) -> ModelResponse:
        return ModelResponse(parts=[TextPart(await self._next(call))])

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        text = await self._next(call)
        yield PartStartEvent(0, TextPart(""))
        if self.fail_after_first_event:
            raise ServerError("broke mid-stream")
        yield PartDeltaEvent(0, TextPartDelta(text))
        yield ResponseCompleted(ModelResponse(parts=[TextPart(text)]))


def make_call(**settings: object) -> ModelCall:
    return ModelCall(messages=[ModelRequest.user_text_prompt("hi")], settings=ModelSettings(**settings))  # type: ignore[arg-type]


def test_policy_defaults_and_validation() -> None:
    policy = RetryPolicy()
    assert policy.retry_on == DEFAULT_RETRY_CATEGORIES
    for cls in (
        RateLimitError,
        ServerError,
        ProviderTimeoutError,
        ProviderConnectionError,
        ResponseDecodeError,
    ):
        assert policy.should_retry(cls("x"))
    for cls in (BadRequestError, AuthenticationError):
        assert not policy.should_retry(cls("x"))
    assert not policy.should_retry(ValueError("x"))
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError, match="initial_delay"):
        RetryPolicy(initial_delay=float("nan"))
    only_rate = RetryPolicy(retry_on=frozenset({ErrorCategory.RATE_LIMIT}))
    assert not only_rate.should_retry(ServerError("x"))


def test_full_jitter_backoff_and_retry_after() -> None:
    policy = RetryPolicy(initial_delay=1.0, multiplier=2.0, max_delay=5.0)
    assert [policy.backoff_bound(i) for i in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert policy.delay_for(ServerError("x"), 2, rand=lambda: 0.5) == 2.0
    assert policy.delay_for(ServerError("x"), 2, rand=lambda: 0.0) == 0.0
    assert policy.delay_for(RateLimitError("x", retry_after=7.5), 0, rand=lambda: 0.5) == 7.5
    ignoring = RetryPolicy(initial_delay=1.0, honor_retry_after=False)
    assert ignoring.delay_for(RateLimitError("x", retry_after=7.5), 0, rand=lambda: 0.5) == 0.5


async def test_request_retries_transient_failures_then_succeeds() -> None:
    model = Scripted(RateLimitError("a", retry_after=0), ServerError("b"), "ok")
    events: list[RetryEvent] = []
    response = await request_with_retry(
        model, make_call(), policy=RetryPolicy(max_retries=2, initial_delay=0.001), on_retry=events.append
    )
    assert response.text == "ok"
    assert model.attempts == 3
    assert [(e.attempt, e.category) for e in events] == [
        (1, ErrorCategory.RATE_LIMIT),
        (2, ErrorCategory.SERVER),
    ]


@pytest.mark.parametrize(("max_retries", "ok"), [(2, True), (1, False)])
async def test_max_retries_exact_and_past(max_retries: int, ok: bool) -> None:
    model = Scripted(ServerError("a"), ServerError("b"), "ok")
    policy = RetryPolicy(max_retries=max_retries, initial_delay=0)
    if ok:
        assert (await request_with_retry(model, make_call(), policy=policy)).text == "ok"
    else:
        with pytest.raises(ServerError, match="b"):
            await request_with_retry(model, make_call(), policy=policy)


async def test_non_retryable_error_is_raised_at_once() -> None:
    model = Scripted(BadRequestError("bad"), "ok")
    with pytest.raises(BadRequestError):
        await request_with_retry(model, make_call(), policy=RetryPolicy(max_retries=5, initial_delay=0))
    assert model.attempts == 1


@pytest.mark.parametrize(("budget", "retried"), [(1.0, True), (0.99, False)])
async def test_cumulative_delay_budget_exact_and_past(budget: float, retried: bool) -> None:
    model = Scripted(RateLimitError("a", retry_after=0.5), RateLimitError("b", retry_after=0.5), "ok")
    policy = RetryPolicy(max_retries=5, max_total_delay=budget)
    shared = RetryBudget()
    sleeps: list[float] = []

    async def run() -> ModelResponse:
        return await request_with_retry(model, make_call(), policy=policy, budget=shared)

    if retried:
        assert (await run()).text == "ok"
        assert shared.total_delay == 1.0
        assert shared.retries == 2
    else:
        with pytest.raises(RateLimitError) as info:
            await run()
        assert any("max_total_delay" in note for note in info.value.__notes__)
        assert shared.retries == 1
    del sleeps


async def test_budget_is_shared_across_requests_of_a_run() -> None:
    shared = RetryBudget()
    policy = RetryPolicy(max_retries=3, max_total_delay=0.01)
    await request_with_retry(
        Scripted(RateLimitError("a", retry_after=0.01), "ok"), make_call(), policy=policy, budget=shared
    )
    with pytest.raises(RateLimitError):
        await request_with_retry(
            Scripted(RateLimitError("b", retry_after=0.01), "ok"), make_call(), policy=policy, budget=shared
        )


async def test_wait_that_would_pass_the_deadline_is_not_taken() -> None:
    model = Scripted(RateLimitError("a", retry_after=10), "ok")
    deadline = anyio.current_time() + 1
    with pytest.raises(RateLimitError) as info:
        await request_with_retry(
            model, make_call(), policy=RetryPolicy(max_retries=3, max_total_delay=None), deadline=deadline
        )
    assert any("run deadline" in n for n in info.value.__notes__)
    assert model.attempts == 1


async def test_attempt_timeout_is_retryable_and_deadline_is_not() -> None:
    model = Scripted(10.0, "ok")
    response = await request_with_retry(
        model, make_call(timeout=0.05), policy=RetryPolicy(max_retries=1, initial_delay=0)
    )
    assert response.text == "ok"
    assert model.deadlines[0] is not None
    model = Scripted(10.0, "ok")
    with pytest.raises(DeadlineExceededError):
        await request_with_retry(
            model,
            make_call(),
            policy=RetryPolicy(max_retries=3, initial_delay=0),
            deadline=anyio.current_time() + 0.05,
        )
    assert model.attempts == 1


async def test_attempt_timeout_without_retries_raises_provider_timeout() -> None:
    with pytest.raises(ProviderTimeoutError, match=r"timeout of 0\.05"):
        await request_with_retry(Scripted(10.0), make_call(timeout=0.05))


async def test_stream_retried_only_before_the_first_event() -> None:
    model = Scripted(ConnectionErrorLike(), "streamed")
    events = [
        e
        async for e in stream_with_retry(
            model, make_call(), policy=RetryPolicy(max_retries=2, initial_delay=0)
        )
    ]
    assert isinstance(events[-1], ResponseCompleted)
    assert model.attempts == 2

    broken = Scripted("x", "y", fail_after_first_event=True)
    seen: list[ModelStreamEvent] = []

    async def consume() -> None:
        async for event in stream_with_retry(
            broken, make_call(), policy=RetryPolicy(max_retries=3, initial_delay=0)
        ):
            seen.append(event)

    with pytest.raises(ServerError, match="mid-stream"):
        await consume()
    assert broken.attempts == 1
    assert len(seen) == 1


async def test_stream_attempt_timeout_before_first_event() -> None:
    model = Scripted(10.0, "fast")
    events = [
        e
        async for e in stream_with_retry(
            model, make_call(timeout=0.05), policy=RetryPolicy(max_retries=1, initial_delay=0)
        )
    ]
    assert isinstance(events[-1], ResponseCompleted)
    assert events[-1].response.text == "fast"


def ConnectionErrorLike() -> ProviderError:
    return ProviderConnectionError("reset by peer")
