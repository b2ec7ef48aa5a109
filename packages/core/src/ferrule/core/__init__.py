"""ferrule's provider-neutral contract.

`import ferrule.core` is cheap: submodules load on first use. Import names from their modules
(`ferrule.core.messages`, `ferrule.core.model`, ...) or from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_getattr

if TYPE_CHECKING:
    from .errors import FerruleError
    from .errors import ProviderError
    from .errors import UnsupportedFeatureError
    from .errors import UserError
    from .messages import Message
    from .messages import ModelRequest
    from .messages import ModelResponse
    from .model import Model
    from .model import ModelCall
    from .model import ToolDefinition
    from .profile import ModelProfile
    from .settings import ModelSettings
    from .usage import RequestUsage
    from .usage import RunUsage
    from .usage import UsageLimits

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


__getattr__ = lazy_getattr(__name__, _LAZY)
