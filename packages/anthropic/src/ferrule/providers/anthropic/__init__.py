"""ferrule's provider for the Anthropic Messages API (Claude).

```python
from ferrule.providers.anthropic import AnthropicModel, AnthropicProvider

model = AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider())  # key from ANTHROPIC_API_KEY
```

`import ferrule.providers.anthropic` is cheap: names load on first use. The wire codec is the
public module [`ferrule.providers.anthropic.codec`][ferrule.providers.anthropic.codec] and the model
family profiles are in [`ferrule.providers.anthropic.profiles`][ferrule.providers.anthropic.profiles].
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ferrule.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from ._entry import infer_model
    from ._model import AnthropicModel
    from ._provider import AnthropicFile
    from ._provider import AnthropicModelInfo
    from ._provider import AnthropicProvider
    from ._provider import DiscoveryLimits
    from ._provider import FileLimits
    from ._provider import FileNotDownloadableError
    from .profiles import AnthropicProfile
    from .profiles import anthropic_profile

__version__ = "0.1.0"

__all__ = [
    "AnthropicFile",
    "AnthropicModel",
    "AnthropicModelInfo",
    "AnthropicProfile",
    "AnthropicProvider",
    "DiscoveryLimits",
    "FileLimits",
    "FileNotDownloadableError",
    "anthropic_profile",
    "infer_model",
    "__version__",
]

_LAZY = {
    "infer_model": "_entry",
    "AnthropicModel": "_model",
    "AnthropicFile": "_provider",
    "AnthropicModelInfo": "_provider",
    "AnthropicProvider": "_provider",
    "DiscoveryLimits": "_provider",
    "FileLimits": "_provider",
    "FileNotDownloadableError": "_provider",
    "AnthropicProfile": "profiles",
    "anthropic_profile": "profiles",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
