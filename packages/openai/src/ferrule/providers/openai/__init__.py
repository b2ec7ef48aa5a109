"""OpenAI (Responses and Chat Completions) and every OpenAI-compatible server, on raw HTTP + msgspec.

```python
from ferrule.providers.openai import OpenAIProvider, OpenAIResponsesModel, OpenAIChatModel, OllamaProvider

model = OpenAIResponsesModel("gpt-5-mini", provider=OpenAIProvider())  # key from OPENAI_API_KEY
local = OpenAIChatModel("llama3.2", provider=OllamaProvider())
```

`import ferrule.providers.openai` is cheap: the names below load on first use. The wire codecs
are public modules ([`chat_codec`][ferrule.providers.openai.chat_codec],
[`responses_codec`][ferrule.providers.openai.responses_codec]) usable without a socket.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ferrule.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from ._model import OpenAIChatModel
    from ._model import OpenAIModelOptions
    from ._model import OpenAIResponsesModel
    from ._provider import CompatibleOptions
    from ._provider import DiscoveredModel
    from ._provider import OpenAICompatibleProvider
    from ._provider import OpenAIProvider
    from ._provider import local_url_policy
    from .compatible import AzureOpenAIProvider
    from .compatible import CerebrasProvider
    from .compatible import DeepSeekProvider
    from .compatible import FireworksProvider
    from .compatible import GroqProvider
    from .compatible import HuggingFaceProvider
    from .compatible import LlamaCppServerProvider
    from .compatible import LMStudioProvider
    from .compatible import MaxPrice
    from .compatible import MistralOpenAIProvider
    from .compatible import OllamaProvider
    from .compatible import OpenRouterProvider
    from .compatible import OpenRouterRouting
    from .compatible import TogetherProvider
    from .compatible import VLLMProvider
    from .profiles import ChatDialect
    from .profiles import ChatProfile
    from .profiles import ResponsesDialect
    from .profiles import ResponsesProfile

__version__ = "0.1.0"

__all__ = [
    "AzureOpenAIProvider",
    "CerebrasProvider",
    "ChatDialect",
    "ChatProfile",
    "CompatibleOptions",
    "DeepSeekProvider",
    "DiscoveredModel",
    "FireworksProvider",
    "GroqProvider",
    "HuggingFaceProvider",
    "LMStudioProvider",
    "LlamaCppServerProvider",
    "MaxPrice",
    "MistralOpenAIProvider",
    "OllamaProvider",
    "OpenAIChatModel",
    "OpenAICompatibleProvider",
    "OpenAIModelOptions",
    "OpenAIProvider",
    "OpenAIResponsesModel",
    "OpenRouterProvider",
    "OpenRouterRouting",
    "ResponsesDialect",
    "ResponsesProfile",
    "TogetherProvider",
    "VLLMProvider",
    "local_url_policy",
    "__version__",
]

_LAZY = {
    "OpenAIChatModel": "_model",
    "OpenAIModelOptions": "_model",
    "OpenAIResponsesModel": "_model",
    "CompatibleOptions": "_provider",
    "DiscoveredModel": "_provider",
    "OpenAICompatibleProvider": "_provider",
    "OpenAIProvider": "_provider",
    "local_url_policy": "_provider",
    "AzureOpenAIProvider": "compatible",
    "CerebrasProvider": "compatible",
    "DeepSeekProvider": "compatible",
    "FireworksProvider": "compatible",
    "GroqProvider": "compatible",
    "HuggingFaceProvider": "compatible",
    "LlamaCppServerProvider": "compatible",
    "LMStudioProvider": "compatible",
    "MaxPrice": "compatible",
    "MistralOpenAIProvider": "compatible",
    "OllamaProvider": "compatible",
    "OpenRouterProvider": "compatible",
    "OpenRouterRouting": "compatible",
    "TogetherProvider": "compatible",
    "VLLMProvider": "compatible",
    "ChatDialect": "profiles",
    "ChatProfile": "profiles",
    "ResponsesDialect": "profiles",
    "ResponsesProfile": "profiles",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)
