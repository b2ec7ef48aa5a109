"""Resolvers the command gives `AgentSpec.resolve`: models (with provider configuration), MCP servers,
and the local tool manifest."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from ._exit import ConfigError

if TYPE_CHECKING:
    from ferrule.agent import Tool
    from ferrule.agent.spec import ModelRef
    from ferrule.agent.toolsets import AbstractToolset
    from ferrule.core.model import Model

    from ._config import ToolEntry

__all__ = ["CONFIGURABLE_PROVIDERS", "load_tools", "mcp_toolsets", "model_resolver"]

# Chat Completions servers of ferrule-openai that take `api_key` and `base_url` like OpenAI itself.
_COMPATIBLE = {
    "openrouter": "OpenRouterProvider",
    "groq": "GroqProvider",
    "deepseek": "DeepSeekProvider",
    "together": "TogetherProvider",
    "fireworks": "FireworksProvider",
    "cerebras": "CerebrasProvider",
    "mistral-openai": "MistralOpenAIProvider",
    "huggingface": "HuggingFaceProvider",
    "ollama": "OllamaProvider",
    "vllm": "VLLMProvider",
    "llamacpp-server": "LlamaCppServerProvider",
    "lmstudio": "LMStudioProvider",
    "openai-compatible": "OpenAICompatibleProvider",
}

CONFIGURABLE_PROVIDERS: tuple[str, ...] = (
    "openai",
    "openai-responses",
    "openai-chat",
    "anthropic",
    "google-gla",
    "gemini",
    *_COMPATIBLE,
)
"""Prefixes whose API key variable and base URL `model_resolver` can set."""


def model_resolver(ref: ModelRef, env: Mapping[str, str]) -> Model:
    """A `ModelResolver` that also applies `api_key_env`, `base_url` and `allow_local_url`.

    Without them it is `entry_point_model_resolver` (the provider reads its own variables). With
    them it builds the provider of one of `CONFIGURABLE_PROVIDERS` with the key from `env[api_key_env]`
    and the URL policy of `ref.url_policy()`.
    """
    from ferrule.agent.spec import SpecResolutionError
    from ferrule.agent.spec import entry_point_model_resolver

    if ref.api_key_env is None and ref.base_url is None:
        return entry_point_model_resolver(ref, env)
    api_key = env[ref.api_key_env] if ref.api_key_env is not None else None
    options: dict[str, Any] = {}
    if ref.base_url is not None:
        # Without a base URL each provider keeps its own default root and policy.
        options["base_url"] = ref.base_url
        options["url_policy"] = ref.url_policy()
    name = ref.name
    match ref.provider:
        case "openai" | "openai-responses" | "openai-chat":
            from ferrule.providers.openai import OpenAIChatModel
            from ferrule.providers.openai import OpenAIProvider
            from ferrule.providers.openai import OpenAIResponsesModel

            provider = OpenAIProvider(api_key=api_key, **options)
            if ref.provider == "openai-chat":
                return OpenAIChatModel(name, provider=provider)
            return OpenAIResponsesModel(name, provider=provider)
        case "anthropic":
            from ferrule.providers.anthropic import AnthropicModel
            from ferrule.providers.anthropic import AnthropicProvider

            return AnthropicModel(name, provider=AnthropicProvider(api_key=api_key, **options))
        case "google-gla" | "gemini":
            from ferrule.providers.google import GoogleModel
            from ferrule.providers.google import GoogleProvider

            return GoogleModel(name, provider=GoogleProvider(api_key=api_key, **options))
        case prefix if prefix in _COMPATIBLE:
            import ferrule.providers.openai as openai

            if prefix == "openai-compatible" and ref.base_url is None:
                raise SpecResolutionError(
                    "the openai-compatible provider needs a base URL (--base-url or base_url)"
                )
            cls = getattr(openai, _COMPATIBLE[prefix])
            return openai.OpenAIChatModel(name, provider=cls(api_key=api_key, **options))
        case _:
            raise SpecResolutionError(
                f"ferrule cannot set the API key variable or base URL of {ref.provider!r}; it reads its own "
                f"environment variables (drop api_key_env/base_url). Configurable: {', '.join(CONFIGURABLE_PROVIDERS)}"
            )


def mcp_toolsets(
    source: Mapping[str, Any], /, *, env: Mapping[str, str], **options: Any
) -> Sequence[AbstractToolset[Any]]:
    """`ferrule.mcp.load_mcp_config` (imported only when a configuration has MCP servers)."""
    from ferrule.mcp import load_mcp_config

    return load_mcp_config(source, env=env, **options)


def _import(reference: str, base: Path) -> Callable[..., Any]:
    module_name, sep, attribute = reference.rpartition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(
            f"tool function {reference!r} must be 'package.module:function' or 'file.py:function'"
        )
    try:
        if module_name.endswith(".py"):
            path = (base / module_name).resolve()
            if not path.is_file():
                raise ConfigError(f"tool file {str(path)!r} (from {reference!r}) does not exist")
            name = f"ferrule_cli_tools_{abs(hash(str(path)))}"
            module = sys.modules.get(name)
            if module is None:
                spec = importlib.util.spec_from_file_location(name, path)
                if spec is None or spec.loader is None:
                    raise ConfigError(f"cannot load tool file {str(path)!r}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"cannot import the tool {reference!r}: {type(exc).__name__}: {exc}") from exc
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ConfigError(f"tool {reference!r}: {module_name} has no function {attribute!r}")
    return function


def load_tools(entries: Sequence[ToolEntry], base: Path, *, require_approval: bool) -> dict[str, Tool[Any]]:
    """The manifest's tools by name; `require_approval` makes every function tool approval-required."""
    from ferrule.agent import Tool
    from ferrule.core.errors import UserError

    tools: dict[str, Tool[Any]] = {}
    for i, entry in enumerate(entries):
        where = f"tools[{i}]"
        try:
            if entry.external:
                if entry.function is not None:
                    raise ConfigError(
                        f"{where}: an external tool has no function; drop 'function' or 'external'"
                    )
                if entry.name is None or entry.parameters is None:
                    raise ConfigError(
                        f"{where}: an external tool needs 'name' and 'parameters' (a JSON Schema)"
                    )
                tool = Tool.external_tool(
                    entry.name, parameters_json_schema=entry.parameters, description=entry.description
                )
            else:
                if entry.function is None:
                    raise ConfigError(f"{where}: needs 'function' ('module:function') or 'external': true")
                if entry.parameters is not None:
                    raise ConfigError(f"{where}: 'parameters' are derived from the function; drop them")
                tool = Tool(
                    _import(entry.function, base),
                    name=entry.name,
                    description=entry.description,
                    requires_approval=entry.requires_approval or require_approval,
                )
        except UserError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if tool.name in tools:
            raise ConfigError(f"{where}: a second tool named {tool.name!r}")
        tools[tool.name] = tool
    return tools
