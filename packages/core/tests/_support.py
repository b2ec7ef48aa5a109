"""Pieces shared by the core tests."""

from __future__ import annotations

from ferrule.core.model import Model
from ferrule.core.profile import ModelProfile

__all__ = ["FixedModel"]


class FixedModel(Model):
    """A test model client with a fixed name, provider and profile; subclasses supply how it answers."""

    def __init__(
        self, model_name: str, *, provider_name: str = "test", profile: ModelProfile | None = None
    ) -> None:
        self._model_name = model_name
        self._provider_name = provider_name
        self._profile = profile or ModelProfile()

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def provider_name(self) -> str:
        return self._provider_name

    @property
    def profile(self) -> ModelProfile:
        return self._profile
