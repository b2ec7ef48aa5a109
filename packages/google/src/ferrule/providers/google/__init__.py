"""Google Gemini for ferrule: the Gemini API and Vertex AI on one GenerateContent client.

```python
from ferrule.providers.google import GoogleModel, GoogleProvider

model = GoogleModel("gemini-2.5-flash", provider=GoogleProvider(api_key="AIza..."))
```

`import ferrule.providers.google` is cheap: names load on first use. The wire codec is the public
module [`ferrule.providers.google.codec`][] and the family profiles are in
[`ferrule.providers.google.profiles`][]; [`ferrule.providers.google.vertex`][] gathers Vertex AI's names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ferrule.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from ._entry import infer_model
    from ._files import DiscoveryLimits
    from ._files import FileLimits
    from ._files import GoogleFile
    from ._files import GoogleModelInfo
    from ._files import ModelList
    from ._model import GoogleModel
    from ._model import decode_count_tokens
    from ._provider import GoogleProvider
    from ._provider import GoogleProviderBase
    from ._provider import VertexAIProvider
    from ._provider import regional_api_base
    from .profiles import GeminiFamily
    from .profiles import GoogleModelTraits
    from .profiles import family_of
    from .profiles import profile_for
    from .profiles import traits_for

__version__ = "0.1.0"

__all__ = [
    "DiscoveryLimits",
    "FileLimits",
    "GeminiFamily",
    "GoogleFile",
    "GoogleModel",
    "GoogleModelInfo",
    "GoogleModelTraits",
    "GoogleProvider",
    "GoogleProviderBase",
    "ModelList",
    "VertexAIProvider",
    "decode_count_tokens",
    "family_of",
    "infer_model",
    "profile_for",
    "regional_api_base",
    "traits_for",
    "__version__",
]

_LAZY = {
    "DiscoveryLimits": "_files",
    "FileLimits": "_files",
    "GoogleFile": "_files",
    "GoogleModelInfo": "_files",
    "ModelList": "_files",
    "infer_model": "_entry",
    "GoogleModel": "_model",
    "decode_count_tokens": "_model",
    "GeminiFamily": "profiles",
    "GoogleModelTraits": "profiles",
    "family_of": "profiles",
    "profile_for": "profiles",
    "traits_for": "profiles",
    "GoogleProvider": "_provider",
    "GoogleProviderBase": "_provider",
    "VertexAIProvider": "_provider",
    "regional_api_base": "_provider",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
