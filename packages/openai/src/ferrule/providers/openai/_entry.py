"""The entry points of this package: what `"<prefix>:<model>"` means for each of its prefixes.

Each entry point of group `ferrule.providers` names the function of this module spelled like its
prefix (`openai-chat` → `ferrule.providers.openai._entry:openai_chat`), which calls
[`infer`][ferrule.providers.openai._entry.infer] with that prefix. Credentials come from the
conventional environment variables; a missing one raises `UserError` naming the variable.

`"openai:<model>"` uses the Responses API (OpenAI's recommended API; stateless, with encrypted
reasoning replay); `"openai-chat:<model>"` uses Chat Completions (PydanticAI's `"openai:"` used
Chat Completions before it too moved to Responses). Local servers read their root from
`<NAME>_BASE_URL` when set; a root given that way is allowed for exactly its origin, since the
environment variable is the operator's explicit choice.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ferrule.core.errors import UserError
from ferrule.core.model import Model

from ._model import OpenAIChatModel
from ._model import OpenAIResponsesModel
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
from .compatible import MistralOpenAIProvider
from .compatible import OllamaProvider
from .compatible import OpenRouterProvider
from .compatible import TogetherProvider
from .compatible import VLLMProvider

__all__ = ["PREFIXES", "infer"]  # and one entry-point function per prefix, below


def _local(cls: type[OpenAICompatibleProvider]) -> OpenAICompatibleProvider:
    env = cls.base_url_env
    configured = os.environ.get(env) if env else None
    if configured:
        return cls(base_url=configured, url_policy=local_url_policy(configured))
    return cls()


def _compatible() -> OpenAICompatibleProvider:
    base_url = os.environ.get("OPENAI_COMPATIBLE_BASE_URL")
    if not base_url:
        raise UserError(
            "the openai-compatible provider needs the OPENAI_COMPATIBLE_BASE_URL environment variable"
        )
    return OpenAICompatibleProvider(
        base_url=base_url, api_key=os.environ.get("OPENAI_COMPATIBLE_API_KEY") or None
    )


_FACTORIES: dict[str, Callable[[str], Model]] = {
    "openai": lambda name: OpenAIResponsesModel(name, provider=OpenAIProvider()),
    "openai-responses": lambda name: OpenAIResponsesModel(name, provider=OpenAIProvider()),
    "openai-chat": lambda name: OpenAIChatModel(name, provider=OpenAIProvider()),
    "azure": lambda name: OpenAIChatModel(name, provider=AzureOpenAIProvider()),
    "azure-responses": lambda name: OpenAIResponsesModel(name, provider=AzureOpenAIProvider()),
    "openrouter": lambda name: OpenAIChatModel(name, provider=OpenRouterProvider()),
    "groq": lambda name: OpenAIChatModel(name, provider=GroqProvider()),
    "deepseek": lambda name: OpenAIChatModel(name, provider=DeepSeekProvider()),
    "deepseek-responses": lambda name: OpenAIResponsesModel(name, provider=DeepSeekProvider()),
    "together": lambda name: OpenAIChatModel(name, provider=TogetherProvider()),
    "fireworks": lambda name: OpenAIChatModel(name, provider=FireworksProvider()),
    "cerebras": lambda name: OpenAIChatModel(name, provider=CerebrasProvider()),
    "mistral-openai": lambda name: OpenAIChatModel(name, provider=MistralOpenAIProvider()),
    "huggingface": lambda name: OpenAIChatModel(name, provider=HuggingFaceProvider()),
    "ollama": lambda name: OpenAIChatModel(name, provider=_local(OllamaProvider)),
    "vllm": lambda name: OpenAIChatModel(name, provider=_local(VLLMProvider)),
    "llamacpp-server": lambda name: OpenAIChatModel(name, provider=_local(LlamaCppServerProvider)),
    "lmstudio": lambda name: OpenAIChatModel(name, provider=_local(LMStudioProvider)),
    "openai-compatible": lambda name: OpenAIChatModel(name, provider=_compatible()),
}

PREFIXES: tuple[str, ...] = tuple(_FACTORIES)
"""Every model-string prefix this package registers."""


def infer(prefix: str, model_name: str) -> Model:
    """The model for `"<prefix>:<model_name>"`, with credentials from the environment."""
    factory = _FACTORIES.get(prefix)
    if factory is None:
        raise UserError(f"unknown model prefix {prefix!r}; ferrule-openai knows {', '.join(PREFIXES)}")
    if not model_name:
        raise UserError(f"the model string {prefix + ':'!r} names no model")
    return factory(model_name)


def _entry_point(prefix: str) -> Callable[[str], Model]:
    """The `infer_model(model_name)` function an entry point names for `prefix`."""

    def infer_model(model_name: str) -> Model:
        return infer(prefix, model_name)

    infer_model.__name__ = infer_model.__qualname__ = prefix.replace("-", "_")
    infer_model.__doc__ = f'The model for `"{prefix}:<model_name>"`, with credentials from the environment.'
    return infer_model


openai = _entry_point("openai")
openai_responses = _entry_point("openai-responses")
openai_chat = _entry_point("openai-chat")
azure = _entry_point("azure")
azure_responses = _entry_point("azure-responses")
openrouter = _entry_point("openrouter")
groq = _entry_point("groq")
deepseek = _entry_point("deepseek")
deepseek_responses = _entry_point("deepseek-responses")
together = _entry_point("together")
fireworks = _entry_point("fireworks")
cerebras = _entry_point("cerebras")
mistral_openai = _entry_point("mistral-openai")
huggingface = _entry_point("huggingface")
ollama = _entry_point("ollama")
vllm = _entry_point("vllm")
llamacpp_server = _entry_point("llamacpp-server")
lmstudio = _entry_point("lmstudio")
openai_compatible = _entry_point("openai-compatible")
