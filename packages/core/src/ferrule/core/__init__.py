"""ferrule's provider-neutral contract.

`import ferrule.core` is cheap: submodules load on first use. Import names from their modules
(`ferrule.core.messages`, `ferrule.core.model`, ...) or from here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import FerruleError, ProviderError, UnsupportedFeatureError, UserError
    from .messages import Message, ModelRequest, ModelResponse
    from .model import Model, ModelCall, ToolDefinition
    from .profile import ModelProfile
    from .settings import ModelSettings
    from .usage import RequestUsage, RunUsage, UsageLimits

__version__ = "0.1.0"

__all__ = [
    "FerruleError",
    "Message",
    "Model",
    "ModelCall",
    "ModelProfile",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ProviderError",
    "RequestUsage",
    "RunUsage",
    "ToolDefinition",
    "UnsupportedFeatureError",
    "UsageLimits",
    "UserError",
    "__version__",
]

_LAZY = {
    "FerruleError": "errors",
    "ProviderError": "errors",
    "UnsupportedFeatureError": "errors",
    "UserError": "errors",
    "Message": "messages",
    "ModelRequest": "messages",
    "ModelResponse": "messages",
    "Model": "model",
    "ModelCall": "model",
    "ToolDefinition": "model",
    "ModelProfile": "profile",
    "ModelSettings": "settings",
    "RequestUsage": "usage",
    "RunUsage": "usage",
    "UsageLimits": "usage",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ferrule.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
