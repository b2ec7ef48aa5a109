"""The entry point of this package: `anthropic:<model>`.

The entry point of group `ferrule.providers` names the function of this module spelled like its
prefix (`ferrule.providers.anthropic._entry:anthropic`).
"""

from __future__ import annotations

from ._model import AnthropicModel
from ._provider import AnthropicProvider

__all__ = ["anthropic", "infer_model"]


def anthropic(model_name: str) -> AnthropicModel:
    """`anthropic:<model>`: a model whose provider reads `ANTHROPIC_API_KEY`.

    Raises `UserError` naming the variable when it is not set.
    """
    return AnthropicModel(model_name, provider=AnthropicProvider())


infer_model = anthropic
"""`anthropic` under its public name, `ferrule.providers.anthropic.infer_model`."""
