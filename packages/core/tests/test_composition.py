from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from datetime import timedelta

import anyio
import pytest

from ferrule.core.composition import TRANSIENT_CATEGORIES
from ferrule.core.composition import FallbackExhausted
from ferrule.core.composition import FallbackModel
from ferrule.core.composition import SelectorModel
from ferrule.core.errors import AuthenticationError
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ContentFilterError
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import ProviderConnectionError
from ferrule.core.errors import ProviderError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ServerError
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestAttempt
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ToolDefinition
from ferrule.core.profile import ModelProfile
from ferrule.core.settings import ModelSettings

from ._support import FixedModel

pytestmark = pytest.mark.anyio

CALL = ModelCall(messages=[ModelRequest.user_text_prompt("hi")])
TOOLS = ModelProfile(supports_tools=True, supports_parallel_tool_calls=True)


class FakeModel(FixedModel):
    """Streams `text` in two deltas, or raises `fail` after `fail_after` events; records every call."""

    def __init__(
        self,
        name: str,
        *,
        text: str = "ok",
        fail: Exception | None = None,
        fail_after: int = 0,
        profile: ModelProfile | None = None,
        settings: ModelSettings | None = None,
        buffered_fail: Exception | None = None,
    ) -> None:
        super().__init__(name, provider_name="fake", profile=profile)
        self.name = name
        self.text = text
        self.fail = fail
        self.fail_after = fail_after
        self.buffered_fail = buffered_fail
        self.settings = settings
        self.calls: list[ModelCall] = []
        self.closed = 0

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        self.calls.append(call)
        events: list[ModelStreamEvent] = [
            PartStartEvent(0, TextPart("")),
            PartDeltaEvent(0, TextPartDelta(self.text)),
            ResponseCompleted(
                ModelResponse(parts=[TextPart(self.text)], model_name=self.name, provider_name="fake")
            ),
        ]
        try:
            for index, event in enumerate(events):
                if self.fail is not None and index == self.fail_after:
                    raise self.fail
                yield event
        finally:
            self.closed += 1

    async def _request(self, call: ModelCall) -> ModelResponse:
        if self.buffered_fail is not None:
            self.calls.append(call)
            raise self.buffered_fail
        return await super()._request(call)


async def collect(model: Model, call: ModelCall = CALL) -> list[ModelStreamEvent]:
    return [event async for event in model.stream(call)]


def completed(events: Sequence[ModelStreamEvent]) -> ModelResponse:
    last = events[-1]
    assert isinstance(last, ResponseCompleted)
    return last.response


# --- FallbackModel -------------------------------------------------------------------------------


async def test_first_healthy_candidate_answers_and_later_ones_are_not_called() -> None:
    a, b = FakeModel("a", text="from a"), FakeModel("b")
    response = completed(await collect(FallbackModel(a, b)))
    assert response.text == "from a"
    assert response.failed_attempts is None
    assert b.calls == []


@pytest.mark.parametrize(
    "error",
    [
        RateLimitError("slow down", retry_after=1.0),
        ServerError("overloaded", status_code=529),
        ProviderConnectionError("reset"),
        ResponseDecodeError("truncated"),
    ],
)
async def test_transient_failure_before_any_event_falls_back(error: ProviderError) -> None:
    a, b = FakeModel("a", fail=error), FakeModel("b", text="from b")
    response = completed(await collect(FallbackModel(a, b)))
    assert response.text == "from b"
    assert response.failed_attempts is not None
    (attempt,) = response.failed_attempts
    assert (attempt.model_name, attempt.provider_name, attempt.outcome) == ("a", "fake", "error")
    assert attempt.error == f"{type(error).__name__}: {error}"
    assert a.closed == 1


@pytest.mark.parametrize(
    "error", [BadRequestError("bad", status_code=400), AuthenticationError("key"), ContentFilterError("no")]
)
async def test_non_transient_failure_propagates_without_fallback(error: ProviderError) -> None:
    a, b = FakeModel("a", fail=error), FakeModel("b")
    with pytest.raises(type(error)) as info:
        await collect(FallbackModel(a, b))
    assert info.value is error
    assert b.calls == []


async def test_never_falls_back_after_an_event_was_delivered() -> None:
    a = FakeModel("a", fail=ServerError("died mid-stream"), fail_after=2)
    b = FakeModel("b")
    seen: list[ModelStreamEvent] = []

    async def consume() -> None:
        async for event in FallbackModel(a, b).stream(CALL):
            seen.append(event)

    with pytest.raises(ServerError, match="died mid-stream"):
        await consume()
    assert len(seen) == 2
    assert b.calls == []
    assert a.closed == 1


async def test_failure_after_the_first_event_is_not_retried_even_for_the_first_delivered_event() -> None:
    a = FakeModel("a", fail=RateLimitError("limit"), fail_after=1)
    b = FakeModel("b")
    with pytest.raises(RateLimitError):
        await collect(FallbackModel(a, b))
    assert b.calls == []


async def test_all_candidates_failing_raises_an_exception_group_of_every_error() -> None:
    errors = [RateLimitError("a limited"), ServerError("b down"), ProviderConnectionError("c unreachable")]
    models = [FakeModel(name, fail=error) for name, error in zip("abc", errors, strict=True)]
    with pytest.raises(FallbackExhausted) as info:
        await collect(FallbackModel(*models))
    group = info.value
    assert list(group.exceptions) == errors
    assert [a.model_name for a in group.attempts] == ["a", "b", "c"]
    assert "fake:a, fake:b, fake:c" in str(group)
    assert isinstance(group, ExceptionGroup)
    assert not isinstance(group, UserError)


async def test_exhausted_group_supports_except_star() -> None:
    model = FallbackModel(FakeModel("a", fail=RateLimitError("x")), FakeModel("b", fail=ServerError("y")))
    caught: list[BaseException] = []
    groups: list[type[BaseException]] = []
    try:
        await collect(model)
    except* RateLimitError as group:
        caught.extend(group.exceptions)
        groups.append(type(group))
    except* ServerError as group:
        caught.extend(group.exceptions)
    assert [type(e) for e in caught] == [RateLimitError, ServerError]
    assert groups == [FallbackExhausted]


async def test_non_transient_error_after_fallbacks_notes_the_earlier_attempts() -> None:
    a, b = FakeModel("a", fail=ServerError("down")), FakeModel("b", fail=BadRequestError("bad"))
    with pytest.raises(BadRequestError) as info:
        await collect(FallbackModel(a, b))
    assert any("fallback tried fake:a first" in note for note in info.value.__notes__)


async def test_fallback_on_categories_and_predicate() -> None:
    limited = FallbackModel(
        FakeModel("a", fail=ServerError("down")), FakeModel("b"), fallback_on={ErrorCategory.RATE_LIMIT}
    )
    with pytest.raises(ServerError):
        await collect(limited)
    predicate = FallbackModel(
        FakeModel("a", fail=ContentFilterError("refused")),
        FakeModel("b", text="b"),
        fallback_on=lambda error: error.category is ErrorCategory.CONTENT_FILTER,
    )
    assert completed(await collect(predicate)).text == "b"


async def test_cancellation_is_never_treated_as_a_failure() -> None:
    class Hanging(FakeModel):
        async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
            self.calls.append(call)
            await anyio.sleep_forever()
            yield PartDeltaEvent(0, TextPartDelta("never"))

    hanging, b = Hanging("a"), FakeModel("b")
    with anyio.move_on_after(0.01):
        await collect(FallbackModel(hanging, b))
    assert b.calls == []


async def test_profile_is_the_intersection_and_is_checked_before_any_candidate() -> None:
    rich = FakeModel("a", profile=TOOLS)
    plain = FakeModel("b", profile=ModelProfile())
    fallback = FallbackModel(rich, plain)
    assert fallback.profile == rich.profile.intersect(plain.profile)
    assert not fallback.profile.supports_tools
    with pytest.raises(UnsupportedFeatureError):
        await collect(fallback, ModelCall(messages=CALL.messages, tools=[ToolDefinition(name="t")]))
    assert rich.calls == []
    assert plain.calls == []


async def test_buffered_requests_fall_back_too() -> None:
    a = FakeModel("a", buffered_fail=RateLimitError("x"))
    b = FakeModel("b", text="buffered b")
    response = await FallbackModel(a, b).request(CALL)
    assert response.text == "buffered b"
    assert response.failed_attempts is not None
    assert [x.model_name for x in response.failed_attempts] == ["a"]
    with pytest.raises(FallbackExhausted):
        await FallbackModel(a, FakeModel("c", buffered_fail=ServerError("y"))).request(CALL)
    with pytest.raises(BadRequestError):
        await FallbackModel(FakeModel("d", buffered_fail=BadRequestError("z")), b).request(CALL)


async def test_nested_fallback_keeps_attempts_in_order() -> None:
    inner = FallbackModel(FakeModel("b1", fail=ServerError("1")), FakeModel("b2", text="b2"))
    outer = FallbackModel(FakeModel("a", fail=RateLimitError("0")), inner)
    response = completed(await collect(outer))
    assert response.failed_attempts is not None
    assert [a.model_name for a in response.failed_attempts] == ["a", "b1"]


async def test_candidate_settings_sit_below_the_callers_settings() -> None:
    a = FakeModel("a", settings=ModelSettings(temperature=0.1, max_tokens=10))
    call = ModelCall(messages=CALL.messages, settings=ModelSettings(max_tokens=99))
    await collect(FallbackModel(a), call)
    assert a.calls[0].settings == ModelSettings(temperature=0.1, max_tokens=99)


def test_fallback_identity_and_validation() -> None:
    fallback = FallbackModel(FakeModel("a"), FakeModel("b"))
    assert fallback.system == "fallback:fake:a,fake:b"
    assert ErrorCategory.RATE_LIMIT in TRANSIENT_CATEGORIES
    assert ErrorCategory.BAD_REQUEST not in TRANSIENT_CATEGORIES
    with pytest.raises(UserError, match="at least one"):
        FallbackModel()
    with pytest.raises(UserError, match="ErrorCategory"):
        FallbackModel(FakeModel("a"), fallback_on=["rate_limit", 3])  # type: ignore[list-item]
    with pytest.raises(UserError, match="ferrule Models"):
        FallbackModel("openai:gpt-5")  # type: ignore[arg-type]


def test_exhausted_error_constructs_like_an_exception_group() -> None:
    attempt = ModelRequestAttempt(
        model_name="m", outcome="error", error="E: x", timestamp=datetime.now(UTC), duration=timedelta(0)
    )
    group = FallbackExhausted("all failed", [ServerError("x")], [attempt])
    derived = group.derive([ServerError("y")])
    assert isinstance(derived, FallbackExhausted)
    assert derived.attempts == (attempt,)
    assert group.message == "all failed"


# --- SelectorModel -------------------------------------------------------------------------------


async def test_selector_routes_each_request() -> None:
    small, large = FakeModel("small", text="s"), FakeModel("large", text="l", profile=TOOLS)

    def route(call: ModelCall) -> Model:
        return large if call.tools else small

    selector = SelectorModel(route, profile=ModelProfile())
    assert completed(await collect(selector)).text == "s"
    assert (await selector.request(CALL)).text == "s"
    assert large.calls == []
    assert selector.system == "selector:selector"


async def test_selector_profile_is_checked_before_select_runs() -> None:
    chosen: list[ModelCall] = []

    def route(call: ModelCall) -> Model:
        chosen.append(call)
        return FakeModel("x", profile=TOOLS)

    selector = SelectorModel(route, profile=ModelProfile())
    with pytest.raises(UnsupportedFeatureError):
        await collect(selector, ModelCall(messages=CALL.messages, tools=[ToolDefinition(name="t")]))
    assert chosen == []


async def test_selector_that_breaks_its_declared_profile_fails_before_any_request() -> None:
    plain = FakeModel("plain", profile=ModelProfile())
    selector = SelectorModel(lambda call: plain, profile=TOOLS, name="router")
    call = ModelCall(messages=CALL.messages, tools=[ToolDefinition(name="t")])
    with pytest.raises(UnsupportedFeatureError, match="SelectorModel 'router' chose it"):
        await collect(selector, call)
    with pytest.raises(UnsupportedFeatureError):
        await selector.request(call)
    assert plain.calls == []


async def test_selector_must_return_a_model() -> None:
    selector = SelectorModel(lambda call: "openai:gpt-5", profile=ModelProfile())  # type: ignore[arg-type,return-value]
    with pytest.raises(UserError, match="not a Model"):
        await collect(selector)


async def test_selector_closes_the_chosen_stream_when_the_caller_stops_early() -> None:
    model = FakeModel("m")
    selector = SelectorModel(lambda call: model, profile=ModelProfile())
    stream = selector.stream(CALL)
    async for _ in stream:
        break
    await stream.aclose()  # type: ignore[attr-defined]
    assert model.closed == 1


async def test_fallback_closes_the_candidate_stream_when_the_caller_stops_early() -> None:
    model = FakeModel("m")
    stream = FallbackModel(model).stream(CALL)
    async for _ in stream:
        break
    await stream.aclose()  # type: ignore[attr-defined]
    assert model.closed == 1
