"""Fail-closed model profiles for OpenAI and the OpenAI-compatible providers, and their wire dialects.

A profile says what a model supports ([`ModelProfile`][ferrule.core.profile.ModelProfile]); a
dialect says how one API spells what varies between OpenAI and compatible servers (the name of
the max-tokens field, which field carries reasoning, whether strict tool schemas exist...). Both
are resolved once per model from its name, by provider:

* known families get the capabilities their provider documents;
* an unknown model of a named provider gets [`UNKNOWN`][ferrule.providers.openai.profiles.UNKNOWN]:
  plain text in and out, `max_tokens`, timeouts and headers only, so an unsupported request fails
  before it is sent. Pass an explicit profile (or a provider `profile_lookup`) to widen it.

Resolution order on a provider (as in the design): the application's `profile_lookup`, then the
provider's built-in family table, then the fail-closed fallback, then the application's
`profile_override` applied to the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal
from typing import TypeAlias

import msgspec

from ferrule.core.profile import ContentKind
from ferrule.core.profile import ModelProfile
from ferrule.core.profile import NativeToolKind

__all__ = [
    "CHAT_SAMPLING",
    "UNKNOWN",
    "ChatDialect",
    "ChatProfile",
    "ProfileLookup",
    "ProfileOverride",
    "ResponsesDialect",
    "ResponsesProfile",
    "azure_chat_profile",
    "azure_responses_profile",
    "deepseek_responses_profile",
    "generic_profile",
    "responses_from_chat",
    "cerebras_profile",
    "deepseek_profile",
    "fireworks_profile",
    "groq_profile",
    "huggingface_profile",
    "local_server_profile",
    "mistral_profile",
    "openai_chat_profile",
    "openai_responses_profile",
    "openrouter_profile",
    "together_profile",
]

_BASE_SETTINGS = frozenset({"max_tokens", "timeout", "extra_headers", "extra_body"})
CHAT_SAMPLING = frozenset(
    {
        "temperature",
        "top_p",
        "seed",
        "stop_sequences",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
    }
)
"""The Chat Completions sampling settings OpenAI's non-reasoning models honour."""
_RESPONSES_SAMPLING = frozenset({"temperature", "top_p", "top_logprobs", "logprobs"})
_OPENAI_TIERS = frozenset({"auto", "default", "flex", "priority"})
_OPENAI_NATIVE: frozenset[NativeToolKind] = frozenset(
    {"web_search", "code_execution", "file_search", "image_generation"}
)
_DOCS: frozenset[ContentKind] = frozenset({"text", "image", "document", "uploaded-file"})

UNKNOWN = ModelProfile(supported_settings=_BASE_SETTINGS)
"""The fail-closed profile of an unrecognised model: text in and out, nothing else."""


class ChatDialect(msgspec.Struct, frozen=True, kw_only=True):
    """How one Chat Completions endpoint spells what varies between OpenAI and compatible servers."""

    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    """The request field that carries `ModelSettings.max_tokens`."""
    system_role: Literal["system", "developer", "user"] = "system"
    """The role instructions and system prompts are sent with."""
    merge_system_messages: bool = False
    """Join leading system messages into one (servers that accept only one)."""
    strict_tools: bool = True
    """The endpoint understands `strict` tool and `json_schema` definitions."""
    allowed_tools: bool = True
    """`tool_choice` may be `{"type": "allowed_tools", ...}`; otherwise the tool list is narrowed instead."""
    tool_choice_required: bool = True
    """`tool_choice: "required"` is accepted."""
    stream_usage: bool = True
    """Ask for a final usage chunk with `stream_options.include_usage`."""
    thinking_field: Literal["reasoning_content", "reasoning"] | None = None
    """The assistant-message field that reasoning is replayed in, when the server takes it back."""
    thinking_replay: Literal["tool_turns", "always", "never"] = "tool_turns"
    """When reasoning goes back: only on assistant turns that called tools (the DeepSeek rule), always, or never."""
    reasoning_details: bool = False
    """Replay OpenRouter's structured `reasoning_details` on assistant messages."""
    thinking_control: Literal["reasoning_effort", "thinking_type", "openrouter", "none"] = "reasoning_effort"
    """How `ModelSettings.thinking` / `reasoning_effort` are sent: OpenAI's `reasoning_effort`,
    DeepSeek/Z.AI `thinking: {"type": ...}`, OpenRouter's `reasoning` object, or not at all."""
    prompt_cache_key: bool = False
    """Send `ModelCall.cache_key` as `prompt_cache_key`."""
    file_urls: bool = False
    """Document URLs may be sent as `file.file_data` URLs (OpenRouter) instead of being refused."""
    audio_data_uri: bool = False
    """Send `input_audio.data` as a data URI rather than bare base64."""
    web_search_options: bool = False
    """Native web search is sent as `web_search_options` (OpenAI's search-preview models)."""
    top_k: bool = False
    """The server accepts a `top_k` sampling field (vLLM, llama.cpp, Ollama)."""


class ResponsesDialect(msgspec.Struct, frozen=True, kw_only=True):
    """How one Responses endpoint is used."""

    store: bool | None = False
    """The `store` field: `False` (stateless, ferrule's default), `True`, or `None` to omit it."""
    encrypted_reasoning: bool = True
    """Ask for `reasoning.encrypted_content` so reasoning can be replayed without stored state."""
    replay_reasoning_text: bool = False
    """Replay reasoning as `reasoning_text` content when there is no encrypted form (DeepSeek)."""
    replay_item_ids: bool = True
    """Send the provider's item IDs (`rs_`, `fc_`, `msg_`) back with replayed items."""


class ChatProfile(msgspec.Struct, frozen=True, kw_only=True):
    """A model's capabilities with the Chat Completions dialect of its endpoint."""

    profile: ModelProfile
    """What the model supports."""
    dialect: ChatDialect = ChatDialect()
    """How the endpoint spells it."""


class ResponsesProfile(msgspec.Struct, frozen=True, kw_only=True):
    """A model's capabilities with the Responses dialect of its endpoint."""

    profile: ModelProfile
    """What the model supports."""
    dialect: ResponsesDialect = ResponsesDialect()
    """How the endpoint is used."""


ProfileLookup: TypeAlias = Callable[[str], ModelProfile | None]
"""An application's profile table: a profile for the model names it knows, `None` for the rest."""
ProfileOverride: TypeAlias = Callable[[str, ModelProfile], ModelProfile]
"""An application's last word on a resolved profile (e.g. to enable a feature a gateway adds)."""


# --- OpenAI --------------------------------------------------------------------------------------


class _Reasoning(msgspec.Struct, frozen=True):
    efforts: frozenset[str]
    always_on: bool


_NO_REASONING = _Reasoning(frozenset(), False)
_O_SERIES = _Reasoning(frozenset({"low", "medium", "high"}), True)
_GPT5 = _Reasoning(frozenset({"minimal", "low", "medium", "high"}), True)
_GPT51 = _Reasoning(frozenset({"none", "low", "medium", "high"}), False)
_GPT52 = _Reasoning(frozenset({"none", "low", "medium", "high", "xhigh"}), False)
_FIXED_MEDIUM = _Reasoning(frozenset({"medium"}), True)

# First matching prefix wins, so specific prefixes come before the broad ones they would match.
_OPENAI_REASONING: tuple[tuple[str, _Reasoning], ...] = (
    ("gpt-5-chat", _NO_REASONING),
    ("gpt-5.1-chat", _FIXED_MEDIUM),
    ("gpt-5.2-chat", _FIXED_MEDIUM),
    ("gpt-5.3-chat", _FIXED_MEDIUM),
    ("gpt-5.1-codex", _Reasoning(frozenset({"low", "medium", "high"}), True)),
    ("gpt-5.1", _GPT51),
    ("gpt-5.2-pro", _Reasoning(frozenset({"medium", "high", "xhigh"}), True)),
    ("gpt-5.2", _GPT52),
    ("gpt-5.3", _GPT52),
    ("gpt-5.4-pro", _Reasoning(frozenset({"medium", "high", "xhigh"}), True)),
    ("gpt-5.4", _GPT52),
    ("gpt-5.5-pro", _Reasoning(frozenset({"medium", "high", "xhigh"}), True)),
    ("gpt-5.5", _GPT52),
    ("gpt-5.6", _Reasoning(frozenset({"none", "low", "medium", "high", "xhigh"}), False)),
    ("gpt-5", _GPT5),
    ("o1-mini", _Reasoning(frozenset(), True)),
    ("o1-preview", _Reasoning(frozenset(), True)),
    ("o1", _O_SERIES),
    ("o3", _O_SERIES),
    ("o4", _O_SERIES),
)


def _family(model_name: str) -> str | None:
    """`gpt-5`, `gpt-4.1`, `gpt-4o`, `o`, `gpt-4`, or `None` for a model ferrule does not know."""
    name = model_name.lower()
    if name.startswith("ft:"):
        # Fine-tuned models are named ft:<base>:<org>:...; they inherit the base model's family.
        name = name[3:]
    if name.startswith("gpt-5"):
        return "gpt-5"
    if name.startswith("gpt-4.1"):
        return "gpt-4.1"
    if name.startswith(("gpt-4o", "chatgpt-4o")):
        return "gpt-4o"
    if name.startswith(("gpt-4.5", "gpt-4-turbo", "gpt-4-")) or name == "gpt-4":
        return "gpt-4"
    if len(name) > 1 and name[0] == "o" and name[1].isdigit():
        return "o"
    return None


def _reasoning(model_name: str) -> _Reasoning:
    name = model_name.lower().removeprefix("ft:")
    for prefix, support in _OPENAI_REASONING:
        if name.startswith(prefix):
            return support
    return _NO_REASONING


def _openai_base(model_name: str, api: Literal["chat", "responses"]) -> ModelProfile | None:
    family = _family(model_name)
    if family is None:
        return None
    name = model_name.lower()
    reasoning = _reasoning(model_name)
    reasons = bool(reasoning.efforts) or reasoning.always_on
    sampling = CHAT_SAMPLING if api == "chat" else _RESPONSES_SAMPLING
    settings = set(_BASE_SETTINGS)
    if not reasons:
        # Reasoning models reject sampling controls (those that can turn reasoning off accept them only
        # then, which a profile cannot express per request), so only never-reasoning models get them.
        settings |= sampling
    if api == "responses":
        settings.add("truncation")
        if reasons:
            settings.add("reasoning_summary")
    if reasons:
        settings.add("thinking")
    kinds: set[ContentKind] = {"text", "uploaded-file"}
    mini_o = name.startswith(("o1-mini", "o1-preview", "o3-mini"))
    if not mini_o:
        kinds |= {"image", "document"}
    if api == "chat" and "audio" in name:
        kinds.add("audio")
    tools = (
        not name.startswith(("o1-mini", "o1-preview"))
        and "search-preview" not in name
        and "audio" not in name
    )
    json_schema = family != "gpt-4" and not name.startswith(("o1-mini", "o1-preview"))
    if name.startswith("gpt-4o-2024-05-13") or name == "chatgpt-4o-latest":
        json_schema = False
    native: set[NativeToolKind] = set()
    if api == "responses" and not mini_o and family in ("gpt-5", "gpt-4.1", "gpt-4o", "o"):
        native |= _OPENAI_NATIVE
    if api == "chat" and "search-preview" in name:
        native.add("web_search")
    tiers = _OPENAI_TIERS if family in ("gpt-5", "o") else frozenset({"auto", "default", "priority"})
    context = (
        1_047_576
        if family == "gpt-4.1"
        else 400_000
        if family == "gpt-5"
        else 200_000
        if family == "o"
        else 128_000
    )
    return ModelProfile(
        supports_tools=tools,
        supports_parallel_tool_calls=tools,
        supports_tool_choice=tools,
        supports_instructions=True,
        supports_json_object_output=not mini_o or name.startswith("o3-mini"),
        supports_json_schema_output=json_schema,
        default_structured_output_mode="tool" if tools else "prompted",
        supports_thinking=reasons,
        thinking_always_on=reasoning.always_on,
        reasoning_efforts=reasoning.efforts,
        service_tiers=tiers,
        content_kinds=frozenset(kinds),
        native_tools=frozenset(native),
        supported_settings=frozenset(settings),
        context_window=context,
    )


def openai_chat_profile(model_name: str) -> ChatProfile:
    """The profile and Chat Completions dialect of an OpenAI model (fail-closed for unknown names)."""
    base = _openai_base(model_name, "chat")
    name = model_name.lower()
    dialect = ChatDialect(
        system_role="user" if name.startswith(("o1-mini", "o1-preview")) else "system",
        prompt_cache_key=True,
        web_search_options="search-preview" in name,
    )
    return ChatProfile(profile=base or UNKNOWN, dialect=dialect)


def openai_responses_profile(model_name: str) -> ResponsesProfile:
    """The profile and Responses dialect of an OpenAI model (fail-closed for unknown names)."""
    base = _openai_base(model_name, "responses")
    return ResponsesProfile(profile=base or UNKNOWN)


def azure_chat_profile(model_name: str) -> ChatProfile:
    """Azure OpenAI deployments named after the OpenAI model they serve; other names fail closed."""
    resolved = openai_chat_profile(model_name)
    return ChatProfile(
        profile=msgspec.structs.replace(resolved.profile, native_tools=frozenset()),
        dialect=msgspec.structs.replace(resolved.dialect, prompt_cache_key=False, web_search_options=False),
    )


# --- compatible providers ------------------------------------------------------------------------


def _compatible(
    *,
    tools: bool = True,
    parallel: bool = True,
    json_object: bool = True,
    json_schema: bool = False,
    thinking: bool = False,
    thinking_always_on: bool = False,
    efforts: frozenset[str] = frozenset(),
    kinds: frozenset[ContentKind] = frozenset({"text"}),
    extra_settings: frozenset[str] = frozenset(),
    sampling: frozenset[str] = frozenset(
        {"temperature", "top_p", "seed", "stop_sequences", "presence_penalty", "frequency_penalty"}
    ),
    emulate_tools: bool = False,
    context_window: int | None = None,
) -> ModelProfile:
    return ModelProfile(
        supports_tools=tools,
        supports_parallel_tool_calls=tools and parallel,
        supports_tool_choice=tools,
        supports_json_object_output=json_object,
        supports_json_schema_output=json_schema,
        default_structured_output_mode="tool" if tools else "native" if json_schema else "prompted",
        tools_emulated_via_output=emulate_tools,
        supports_thinking=thinking,
        thinking_always_on=thinking_always_on,
        reasoning_efforts=efforts,
        content_kinds=kinds,
        supported_settings=_BASE_SETTINGS
        | sampling
        | extra_settings
        | (frozenset({"thinking"}) if thinking else frozenset[str]()),
        context_window=context_window,
    )


_GPT_OSS = _compatible(
    json_schema=True,
    thinking=True,
    thinking_always_on=True,
    efforts=frozenset({"low", "medium", "high"}),
    sampling=frozenset({"temperature", "top_p", "seed", "stop_sequences"}),
)


def _strip_vendor(model_name: str) -> str:
    return model_name.lower().rsplit("/", 1)[-1]


def groq_profile(model_name: str) -> ChatProfile:
    """Groq's documented families: Llama 3.x/4, Qwen 3, gpt-oss, Kimi K2, DeepSeek R1 distills."""
    name = model_name.lower()
    short = _strip_vendor(name)
    dialect = ChatDialect(
        strict_tools=False,
        allowed_tools=False,
        thinking_field="reasoning",
        thinking_replay="never",
        thinking_control="none",
    )
    profile: ModelProfile | None = None
    if short.startswith("gpt-oss"):
        profile = _GPT_OSS
        dialect = msgspec.structs.replace(dialect, thinking_control="reasoning_effort")
    elif short.startswith("llama-4"):
        profile = _compatible(json_schema=True, kinds=frozenset({"text", "image"}))
    elif short.startswith(("llama-3", "llama3")):
        profile = _compatible()
    elif short.startswith("qwen3") or short.startswith("qwen-qwq"):
        profile = _compatible(thinking=True)
    elif short.startswith("kimi-k2"):
        profile = _compatible(json_schema=True)
    elif short.startswith("deepseek-r1"):
        profile = _compatible(thinking=True, thinking_always_on=True)
    elif short.startswith("compound"):
        profile = _compatible(tools=False)
    return ChatProfile(profile=profile or UNKNOWN, dialect=dialect)


def deepseek_profile(model_name: str) -> ChatProfile:
    """DeepSeek's chat and reasoner models; reasoning is replayed on tool turns as `reasoning_content`."""
    name = model_name.lower()
    dialect = ChatDialect(
        max_tokens_field="max_tokens",
        strict_tools=False,
        allowed_tools=False,
        thinking_field="reasoning_content",
        thinking_replay="tool_turns",
        thinking_control="thinking_type",
    )
    if name.startswith("deepseek-reasoner"):
        profile = _compatible(
            thinking=True,
            thinking_always_on=True,
            json_object=True,
            sampling=frozenset({"stop_sequences"}),
        )
    elif name.startswith(("deepseek-chat", "deepseek-v")):
        profile = _compatible(thinking=True)
    else:
        profile = UNKNOWN
    return ChatProfile(profile=profile, dialect=dialect)


def _open_weights(short: str) -> ModelProfile | None:
    """Capabilities of open-weight families as served by hosted inference providers."""
    if short.startswith("gpt-oss"):
        return _GPT_OSS
    if short.startswith(("qwen3", "qwq", "deepseek-r1")):
        return _compatible(json_schema=True, thinking=True)
    if short.startswith(
        ("qwen2.5-vl", "qwen2-vl", "llama-4", "llama-3.2-11b-vision", "llama-3.2-90b-vision")
    ):
        return _compatible(json_schema=True, kinds=frozenset({"text", "image"}))
    if short.startswith(
        (
            "qwen2.5",
            "qwen-2.5",
            "llama-3",
            "llama3",
            "meta-llama-3",
            "mistral",
            "mixtral",
            "kimi-k2",
            "glm-4",
            "deepseek-v3",
        )
    ):
        return _compatible(json_schema=True)
    return None


def _open_weights_host(
    model_name: str, thinking_field: Literal["reasoning_content", "reasoning"]
) -> ChatProfile:
    """A host of open-weight families: the family's profile and a plain compatible dialect."""
    return ChatProfile(
        profile=_open_weights(_strip_vendor(model_name)) or UNKNOWN,
        dialect=ChatDialect(
            max_tokens_field="max_tokens",
            strict_tools=False,
            allowed_tools=False,
            thinking_field=thinking_field,
            thinking_replay="never",
            thinking_control="none",
        ),
    )


def together_profile(model_name: str) -> ChatProfile:
    """Together AI: open-weight families by their upstream names (`vendor/model`)."""
    return _open_weights_host(model_name, "reasoning")


def fireworks_profile(model_name: str) -> ChatProfile:
    """Fireworks AI: `accounts/fireworks/models/<name>` ids of open-weight families."""
    return _open_weights_host(model_name, "reasoning_content")


def huggingface_profile(model_name: str) -> ChatProfile:
    """The Hugging Face inference router: open-weight families by their Hub repository names."""
    return _open_weights_host(model_name, "reasoning_content")


def cerebras_profile(model_name: str) -> ChatProfile:
    """Cerebras: Llama, Qwen and gpt-oss models."""
    short = _strip_vendor(model_name)
    profile = _open_weights(short)
    if profile is None and short.startswith("llama3"):
        profile = _compatible(json_schema=True)
    return ChatProfile(
        profile=profile or UNKNOWN,
        dialect=ChatDialect(
            max_tokens_field="max_completion_tokens",
            allowed_tools=False,
            thinking_field="reasoning",
            thinking_replay="never",
            thinking_control="reasoning_effort" if short.startswith("gpt-oss") else "none",
        ),
    )


def mistral_profile(model_name: str) -> ChatProfile:
    """Mistral's OpenAI-compatible endpoint: Mistral, Magistral, Codestral, Pixtral and Ministral models."""
    name = model_name.lower()
    profile: ModelProfile | None = None
    if name.startswith(
        (
            "mistral-large",
            "mistral-medium",
            "mistral-small",
            "ministral",
            "pixtral",
            "open-mistral",
            "codestral",
            "devstral",
        )
    ):
        vision = name.startswith(("pixtral", "mistral-medium", "mistral-small", "mistral-large"))
        profile = _compatible(
            json_schema=True, kinds=frozenset({"text", "image"}) if vision else frozenset({"text"})
        )
    elif name.startswith("magistral"):
        profile = _compatible(json_schema=True, thinking=True, thinking_always_on=True)
    return ChatProfile(
        profile=profile or UNKNOWN,
        dialect=ChatDialect(
            max_tokens_field="max_tokens", allowed_tools=False, stream_usage=False, thinking_control="none"
        ),
    )


def openrouter_profile(model_name: str) -> ChatProfile:
    """OpenRouter: capabilities of the upstream model (`vendor/model`), reached through OpenRouter's dialect."""
    name = model_name.lower()
    vendor, _, short = name.partition("/")
    short = short.split(":", 1)[0]
    profile: ModelProfile | None = None
    if vendor == "openai":
        base = _openai_base(short, "chat")
        if base is not None:
            profile = msgspec.structs.replace(base, native_tools=frozenset(), service_tiers=frozenset())
    elif vendor == "anthropic" and short.startswith("claude"):
        profile = _compatible(
            json_schema=short.startswith(("claude-sonnet-4", "claude-opus-4", "claude-haiku-4")),
            thinking=True,
            efforts=frozenset({"low", "medium", "high"}),
            kinds=frozenset({"text", "image", "document"}),
            sampling=frozenset({"temperature", "top_p", "stop_sequences"}),
        )
    elif vendor == "google" and short.startswith("gemini"):
        profile = _compatible(
            json_schema=True,
            thinking=short.startswith(("gemini-2.5", "gemini-3")),
            efforts=frozenset({"low", "medium", "high"})
            if short.startswith(("gemini-2.5", "gemini-3"))
            else frozenset(),
            kinds=frozenset({"text", "image", "audio", "video", "document"}),
        )
    else:
        profile = _open_weights(short)
        if profile is None and vendor in ("x-ai", "z-ai", "minimax", "moonshotai", "deepseek", "mistralai"):
            profile = _compatible(json_schema=True, thinking=vendor != "mistralai")
    if profile is not None:
        profile = msgspec.structs.replace(
            profile,
            supported_settings=profile.supported_settings
            | {"top_k", "logit_bias"} - ({"top_k"} if vendor == "openai" else set()),
        )
    return ChatProfile(
        profile=profile or UNKNOWN,
        dialect=ChatDialect(
            max_tokens_field="max_completion_tokens",
            allowed_tools=False,
            thinking_field="reasoning",
            thinking_replay="always",
            reasoning_details=True,
            thinking_control="openrouter",
            prompt_cache_key=False,
            file_urls=True,
            top_k=True,
        ),
    )


def local_server_profile(
    model_name: str, server: Literal["ollama", "vllm", "llamacpp", "lmstudio"]
) -> ChatProfile:
    """Local servers: tools, JSON-object and JSON-schema output (grammar-constrained) for every model.

    Which model a local server runs is the operator's choice, so capabilities follow the server,
    not the name. Reasoning is decoded from `reasoning_content` / `reasoning` whenever it appears
    and replayed on tool turns. Small models that cannot call tools natively need
    `tools_emulated_via_output`; set it with a `profile_override`.
    """
    del model_name
    thinking_field: Literal["reasoning_content", "reasoning"] = (
        "reasoning" if server == "ollama" else "reasoning_content"
    )
    profile = _compatible(
        json_schema=True,
        thinking=True,
        kinds=frozenset({"text", "image"}),
        extra_settings=frozenset({"top_k"}) if server != "lmstudio" else frozenset(),
        sampling=CHAT_SAMPLING,
    )
    return ChatProfile(
        profile=profile,
        dialect=ChatDialect(
            max_tokens_field="max_tokens",
            # Local servers enforce schemas with grammars, exactly as written: no strict rewrite.
            strict_tools=False,
            allowed_tools=False,
            stream_usage=True,
            thinking_field=thinking_field,
            thinking_replay="tool_turns",
            thinking_control="none",
            top_k=server != "lmstudio",
        ),
    )


def generic_profile(model_name: str) -> ChatProfile:
    """The generic compatible provider: an arbitrary endpoint has no identity to resolve against, so fail closed."""
    del model_name
    return ChatProfile(
        profile=UNKNOWN,
        dialect=ChatDialect(
            max_tokens_field="max_tokens",
            strict_tools=False,
            allowed_tools=False,
            thinking_field="reasoning_content",
            thinking_replay="tool_turns",
            thinking_control="none",
        ),
    )


_RESPONSES_SETTINGS = _BASE_SETTINGS | _RESPONSES_SAMPLING | {"truncation", "reasoning_summary", "thinking"}


def responses_from_chat(profile: ModelProfile) -> ModelProfile:
    """A chat profile narrowed to what the Responses API can express (no seed, stop or penalties)."""
    return msgspec.structs.replace(
        profile, supported_settings=profile.supported_settings & _RESPONSES_SETTINGS
    )


def deepseek_responses_profile(model_name: str) -> ResponsesProfile:
    """DeepSeek's Responses endpoint: stateless replay of `reasoning_text`, no encrypted reasoning or item IDs."""
    return ResponsesProfile(
        profile=responses_from_chat(deepseek_profile(model_name).profile),
        dialect=ResponsesDialect(
            store=None, encrypted_reasoning=False, replay_reasoning_text=True, replay_item_ids=False
        ),
    )


def azure_responses_profile(model_name: str) -> ResponsesProfile:
    """Azure OpenAI's Responses API: OpenAI's profile for deployments named after an OpenAI model."""
    resolved = openai_responses_profile(model_name)
    return ResponsesProfile(
        profile=msgspec.structs.replace(
            resolved.profile,
            native_tools=resolved.profile.native_tools
            & {"code_execution", "image_generation", "file_search"},
        ),
        dialect=resolved.dialect,
    )


def resolve(
    model_name: str,
    builtin: ModelProfile,
    *,
    known: bool,
    lookup: ProfileLookup | None = None,
    override: ProfileOverride | None = None,
) -> ModelProfile:
    """The four-layer resolution: application lookup, built-in family (when `known`), fallback, override."""
    profile = lookup(model_name) if lookup is not None else None
    if profile is None:
        profile = builtin if known else UNKNOWN
    if override is not None:
        profile = override(model_name, profile)
    return profile
