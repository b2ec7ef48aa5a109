"""Models made of other models: ordered fallback and per-request selection.

Both are ordinary [`Model`][ferrule.core.model.Model]s, so the agent loop needs no branch for them.

* [`FallbackModel`][ferrule.core.composition.FallbackModel] tries its candidates in order and moves
  on only after a transient [`ProviderError`][ferrule.core.errors.ProviderError] (rate limit, server,
  timeout, connection, decode) and only while nothing of the failed stream reached the caller: once
  one stream event has been delivered, a failure is the caller's, never silently replaced by another
  model's answer. Its profile is the intersection of its candidates' profiles, so a call is accepted
  only if every candidate could serve it. When every candidate fails,
  [`FallbackExhausted`][ferrule.core.composition.FallbackExhausted] carries every attempt's error.
* [`SelectorModel`][ferrule.core.composition.SelectorModel] asks application code for the concrete
  model of each request; the application declares the profile its routing guarantees.

```python
from ferrule.core.composition import FallbackModel

model = FallbackModel(primary, backup)   # backup answers when primary is rate limited or down
```
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any
from typing import Final

import anyio
import msgspec

from .errors import ErrorCategory
from .errors import FerruleError
from .errors import ProviderError
from .errors import UnsupportedFeatureError
from .errors import UserError
from .messages import ModelRequestAttempt
from .messages import ModelResponse
from .model import Model
from .model import ModelCall
from .model import ModelStreamEvent
from .model import ResponseCompleted
from .profile import ModelProfile
from .settings import ModelSettings
from .settings import merge_settings

__all__ = ["TRANSIENT_CATEGORIES", "FallbackExhausted", "FallbackModel", "SelectorModel"]

TRANSIENT_CATEGORIES: Final = frozenset(
    {
        ErrorCategory.RATE_LIMIT,
        ErrorCategory.SERVER,
        ErrorCategory.TIMEOUT,
        ErrorCategory.CONNECTION,
        ErrorCategory.DECODE,
    }
)
"""The error categories a [`FallbackModel`][ferrule.core.composition.FallbackModel] falls back on by default."""


class FallbackExhausted(ExceptionGroup[ProviderError], FerruleError):
    """Every candidate of a [`FallbackModel`][ferrule.core.composition.FallbackModel] failed.

    An `ExceptionGroup` of each attempt's `ProviderError`, in order, so `except* RateLimitError`
    works; `attempts` records which model failed how and for how long.
    """

    attempts: tuple[ModelRequestAttempt, ...]
    """One record per failed candidate, in the order they were tried."""

    def __new__(
        cls, message: str, errors: Sequence[ProviderError], attempts: Sequence[ModelRequestAttempt] = ()
    ) -> FallbackExhausted:
        self = super().__new__(cls, message, list(errors))
        self.attempts = tuple(attempts)
        return self

    def __init__(
        self, message: str, errors: Sequence[ProviderError], attempts: Sequence[ModelRequestAttempt] = ()
    ) -> None:
        super().__init__(message, list(errors))

    def derive(self, excs: Sequence[ProviderError]) -> FallbackExhausted:  # pyright: ignore[reportIncompatibleMethodOverride]
        """The same group with only `excs` (used by `except*` to split it)."""
        return FallbackExhausted(self.message, excs, self.attempts)


FallbackPolicy = Callable[[ProviderError], bool] | Collection[ErrorCategory]
"""What a fallback falls back on: a set of error categories, or a predicate over the error."""


class _Attempt:
    """Times one candidate's attempt for its `ModelRequestAttempt` record."""

    __slots__ = ("model", "started", "started_at")

    def __init__(self, model: Model) -> None:
        self.model = model
        self.started = datetime.now(UTC)
        self.started_at = anyio.current_time()

    def failed(self, error: ProviderError) -> ModelRequestAttempt:
        return ModelRequestAttempt(
            model_name=self.model.model_name,
            provider_name=self.model.provider_name,
            outcome="error",
            error=f"{type(error).__name__}: {error}",
            timestamp=self.started,
            duration=timedelta(seconds=max(0.0, anyio.current_time() - self.started_at)),
        )


def _with_attempts(response: ModelResponse, attempts: list[ModelRequestAttempt]) -> ModelResponse:
    if not attempts:
        return response
    earlier = [*attempts, *(response.failed_attempts or ())]
    return msgspec.structs.replace(response, failed_attempts=earlier)


def _candidate_call(model: Model, call: ModelCall) -> ModelCall:
    # The candidate's own model-level settings sit below everything the caller merged.
    if model.settings is None:
        return call
    return msgspec.structs.replace(call, settings=merge_settings(model.settings, call.settings))


async def _aclose(stream: AsyncIterator[ModelStreamEvent]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


class FallbackModel(Model):
    """Tries each candidate model in order, moving on only after a transient failure before any output.

    Args:
        *models: The candidates, most preferred first (at least one).
        fallback_on: The error categories to fall back on (default
            [`TRANSIENT_CATEGORIES`][ferrule.core.composition.TRANSIENT_CATEGORIES]), or a predicate
            over the `ProviderError`. Anything else (a user error, cancellation, a bad request)
            propagates at once.
        settings: Model-level default settings for the fallback as a whole.
    """

    def __init__(
        self,
        *models: Model,
        fallback_on: FallbackPolicy = TRANSIENT_CATEGORIES,
        settings: ModelSettings | None = None,
    ) -> None:
        if not models:
            raise UserError("FallbackModel needs at least one candidate model")
        for model in models:
            if not isinstance(model, Model):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UserError(
                    f"FallbackModel candidates must be ferrule Models, got {type(model).__name__}"
                )
        self.models: tuple[Model, ...] = models
        """The candidates, in the order they are tried."""
        if callable(fallback_on):
            self._should_fall_back: Callable[[ProviderError], bool] = fallback_on
        else:
            categories = frozenset(fallback_on)
            unknown = [c for c in categories if not isinstance(c, ErrorCategory)]  # pyright: ignore[reportUnnecessaryIsInstance]
            if unknown:
                raise UserError(f"fallback_on takes ErrorCategory values or a predicate, got {unknown!r}")
            self._should_fall_back = lambda error: error.category in categories
        self.settings = settings
        self._profile = functools.reduce(ModelProfile.intersect, (model.profile for model in models))

    @property
    def model_name(self) -> str:
        """The candidates' `provider:model` names, comma-separated."""
        return ",".join(model.system for model in self.models)

    @property
    def provider_name(self) -> str:
        """Always `"fallback"`; each response names the provider that actually answered."""
        return "fallback"

    @property
    def profile(self) -> ModelProfile:
        """The intersection of the candidates' profiles: only what every candidate supports."""
        return self._profile

    def _exhausted(
        self, errors: list[ProviderError], attempts: list[ModelRequestAttempt]
    ) -> FallbackExhausted:
        tried = ", ".join(f"{a.provider_name}:{a.model_name}" for a in attempts)
        return FallbackExhausted(f"every fallback candidate failed ({tried})", errors, attempts)

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        errors: list[ProviderError] = []
        attempts: list[ModelRequestAttempt] = []
        for model in self.models:
            attempt = _Attempt(model)
            delivered = False
            events = model.stream(_candidate_call(model, call))
            try:
                async for event in events:
                    if isinstance(event, ResponseCompleted) and attempts:
                        event = ResponseCompleted(_with_attempts(event.response, attempts))
                    delivered = True
                    yield event
                return
            except ProviderError as error:
                # After an event has reached the caller, another model's answer would duplicate or
                # contradict it: the failure is the caller's to handle.
                if delivered or not self._should_fall_back(error):
                    _note_attempts(error, attempts)
                    raise
                errors.append(error)
                attempts.append(attempt.failed(error))
            finally:
                await _aclose(events)
        raise self._exhausted(errors, attempts)

    async def _request(self, call: ModelCall) -> ModelResponse:
        errors: list[ProviderError] = []
        attempts: list[ModelRequestAttempt] = []
        for model in self.models:
            attempt = _Attempt(model)
            try:
                response = await model.request(_candidate_call(model, call))
            except ProviderError as error:
                if not self._should_fall_back(error):
                    _note_attempts(error, attempts)
                    raise
                errors.append(error)
                attempts.append(attempt.failed(error))
            else:
                return _with_attempts(response, attempts)
        raise self._exhausted(errors, attempts)


def _note_attempts(error: Exception, attempts: list[ModelRequestAttempt]) -> None:
    for attempt in attempts:
        error.add_note(f"fallback tried {attempt.provider_name}:{attempt.model_name} first: {attempt.error}")


class SelectorModel(Model):
    """Lets application code pick the concrete model for each request.

    Args:
        select: Called with each [`ModelCall`][ferrule.core.model.ModelCall]; returns the model
            that serves it.
        profile: The profile every model `select` can return supports. Calls are checked against it
            before `select` runs, and the chosen model checks the call against its own profile too,
            so a routing mistake fails before any request is sent.
        name: The selector's name in `model_name`.
        settings: Model-level default settings for the selector as a whole.
    """

    def __init__(
        self,
        select: Callable[[ModelCall], Model],
        profile: ModelProfile,
        *,
        name: str = "selector",
        settings: ModelSettings | None = None,
    ) -> None:
        self._select = select
        self._profile = profile
        self._name = name
        self.settings = settings

    @property
    def model_name(self) -> str:
        """The selector's name."""
        return self._name

    @property
    def provider_name(self) -> str:
        """Always `"selector"`; each response names the provider that actually answered."""
        return "selector"

    @property
    def profile(self) -> ModelProfile:
        """The declared common profile of every model the selector may return."""
        return self._profile

    def select(self, call: ModelCall) -> tuple[Model, ModelCall]:
        """The model chosen for `call` and the call it receives, checked against its profile."""
        model: Any = self._select(call)
        if not isinstance(model, Model):
            raise UserError(
                f"SelectorModel {self._name!r}: select() returned {type(model).__name__}, not a Model"
            )
        chosen = _candidate_call(model, call)
        try:
            model.check(chosen)
        except UnsupportedFeatureError as exc:
            raise UnsupportedFeatureError(
                exc.feature,
                model=exc.model,
                hint=f"SelectorModel {self._name!r} chose it although its declared profile allows the call; "
                "declare a narrower profile or route such calls to a model that supports them",
            ) from exc
        return model, chosen

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        model, chosen = self.select(call)
        events = model.stream(chosen)
        try:
            async for event in events:
                yield event
        finally:
            await _aclose(events)

    async def _request(self, call: ModelCall) -> ModelResponse:
        model, chosen = self.select(call)
        return await model.request(chosen)
