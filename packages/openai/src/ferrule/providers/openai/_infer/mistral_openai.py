"""Entry point `mistral-openai`: `"mistral-openai:<model>"`."""

from __future__ import annotations

from ferrule.core.model import Model

from .._entry import infer


def infer_model(model_name: str) -> Model:
    """The model for `"mistral-openai:<model_name>"`, with credentials from the environment."""
    return infer("mistral-openai", model_name)
