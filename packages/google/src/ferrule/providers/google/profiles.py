"""Fail-closed model profiles for Gemini families, and the wire traits that go with them."""

from __future__ import annotations

import re
from typing import Final
from typing import Literal
from typing import TypeAlias

import msgspec

from ferrule.core.profile import ContentKind
from ferrule.core.profile import ModelProfile
from ferrule.core.profile import NativeToolKind

from ._schema import SchemaDialect

__all__ = ["GeminiFamily", "GoogleModelTraits", "family_of", "profile_for", "traits_for"]

GeminiFamily: TypeAlias = Literal[
    "gemini-1.5",
    "gemini-2.0-flash",
    "gemini-2.0-flash-lite",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
    "gemini-3-pro",
    "gemini-3-flash",
    "unknown",
]
"""The model families ferrule knows; everything else is `"unknown"` and gets a text-only profile."""


class GoogleModelTraits(msgspec.Struct, frozen=True, kw_only=True):
    """How requests for a family are encoded (what a `ModelProfile` cannot say)."""

    family: GeminiFamily
    """The family the model belongs to."""
    schema_dialect: SchemaDialect = "json_schema"
    """Which schema fields tools and structured output use."""
    thinking_style: Literal["none", "budget", "level"] = "none"
    """How reasoning is configured: `thinkingBudget` (2.5) or `thinkingLevel` (3.x)."""
    thinking_can_be_disabled: bool = False
    """A zero thinking budget turns reasoning off."""
    effort_budgets: dict[str, int] = msgspec.field(default_factory=dict[str, int])
    """`reasoning_effort` → `thinkingBudget` for budget-style families."""
    min_thinking_budget: int = 0
    """Smallest accepted non-zero budget."""
    max_thinking_budget: int | None = None
    """Largest accepted budget."""
    json_output_with_tools: bool = False
    """Function tools can be combined with a JSON response MIME type in one request."""
    replays_function_signatures: bool = False
    """Each model turn's first function call must carry a thought signature (Gemini 3)."""
    server_side_tool_invocations: bool = False
    """`includeServerSideToolInvocations` makes native tool calls visible as parts (Gemini API only)."""


_ALL_CONTENT: Final[frozenset[ContentKind]] = frozenset(
    {"text", "image", "audio", "video", "document", "uploaded-file"}
)
_SAMPLING: Final = frozenset(
    {
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "timeout",
        "extra_headers",
        "extra_body",
    }
)
_ALL_NATIVE: Final[frozenset[NativeToolKind]] = frozenset(
    {"web_search", "url_context", "web_fetch", "code_execution", "file_search"}
)

_NAME = re.compile(
    r"(?:models/)?gemini-(?P<version>\d+(?:\.\d+)?)-(?P<tier>pro|flash-lite|flash-8b|flash)"
    r"(?P<rest>(?:-[a-z0-9.]+)*)"
)
# Variants with a different output modality or API (image, speech, live audio, embeddings, computer use)
# share a family prefix but not its abilities; they stay unknown until profiled on purpose.
_SPECIAL = re.compile(r"-(?:image|tts|audio|live|embedding|native|computer|robotics|thinking-exp)\b")

# Release → tier → family; a tier not listed stays unknown (Flash-Lite 3.x has its own thinking
# levels, so it stays unknown until profiled).
_TIERS: Final[dict[str, dict[str, GeminiFamily]]] = {
    "2.0": {"flash": "gemini-2.0-flash", "flash-lite": "gemini-2.0-flash-lite"},
    "2.5": {"pro": "gemini-2.5-pro", "flash": "gemini-2.5-flash", "flash-lite": "gemini-2.5-flash-lite"},
    "3": {"pro": "gemini-3-pro", "flash": "gemini-3-flash"},
}


def family_of(model_name: str) -> GeminiFamily:
    """The family of a Gemini model name (with or without the `models/` prefix)."""
    match = _NAME.fullmatch(model_name)
    if match is None or _SPECIAL.search(match.group("rest") or ""):
        return "unknown"
    version = match.group("version")
    if version == "1.5":
        return "gemini-1.5"
    # Every 3.x version shares the 3 families.
    release = "3" if version.partition(".")[0] == "3" else version
    return _TIERS.get(release, {}).get(match.group("tier"), "unknown")


_BUDGET_EFFORTS_FLASH: Final = {"none": 0, "low": 1024, "medium": 8192, "high": 24576}
_BUDGET_EFFORTS_PRO: Final = {"low": 1024, "medium": 8192, "high": 32768}


def _gemini_3_traits(family: GeminiFamily) -> GoogleModelTraits:
    # Thinking levels, JSON output beside tools, signed function calls, visible server-side tools.
    return GoogleModelTraits(
        family=family,
        thinking_style="level",
        json_output_with_tools=True,
        replays_function_signatures=True,
        server_side_tool_invocations=True,
    )


def _flash_25_traits(family: GeminiFamily, *, min_thinking_budget: int) -> GoogleModelTraits:
    # Gemini 2.5 Flash tiers: a thinking budget up to 24576 that zero turns off.
    return GoogleModelTraits(
        family=family,
        thinking_style="budget",
        thinking_can_be_disabled=True,
        effort_budgets=_BUDGET_EFFORTS_FLASH,
        min_thinking_budget=min_thinking_budget,
        max_thinking_budget=24576,
    )


_TRAITS: Final[dict[GeminiFamily, GoogleModelTraits]] = {
    "gemini-1.5": GoogleModelTraits(family="gemini-1.5", schema_dialect="openapi"),
    "gemini-2.0-flash": GoogleModelTraits(family="gemini-2.0-flash"),
    "gemini-2.0-flash-lite": GoogleModelTraits(family="gemini-2.0-flash-lite"),
    "gemini-2.5-pro": GoogleModelTraits(
        family="gemini-2.5-pro",
        thinking_style="budget",
        effort_budgets=_BUDGET_EFFORTS_PRO,
        min_thinking_budget=128,
        max_thinking_budget=32768,
    ),
    "gemini-2.5-flash": _flash_25_traits("gemini-2.5-flash", min_thinking_budget=1),
    "gemini-2.5-flash-lite": _flash_25_traits("gemini-2.5-flash-lite", min_thinking_budget=512),
    "gemini-3-pro": _gemini_3_traits("gemini-3-pro"),
    "gemini-3-flash": _gemini_3_traits("gemini-3-flash"),
    "unknown": GoogleModelTraits(family="unknown", schema_dialect="openapi"),
}

_THINKING_SETTINGS: Final = _SAMPLING | {"thinking_budget_tokens"}


def _chat(
    *,
    native: frozenset[NativeToolKind],
    context: int,
    max_output: int,
    thinking: bool = False,
    always_on: bool = False,
    efforts: frozenset[str] = frozenset(),
) -> ModelProfile:
    return ModelProfile(
        supports_tools=True,
        supports_parallel_tool_calls=True,
        supports_tool_choice=True,
        supports_instructions=True,
        supports_json_object_output=True,
        supports_json_schema_output=True,
        default_structured_output_mode="native" if thinking else "tool",
        supports_thinking=thinking,
        thinking_always_on=always_on,
        reasoning_efforts=efforts,
        content_kinds=_ALL_CONTENT,
        native_tools=native,
        supported_settings=_THINKING_SETTINGS if thinking else _SAMPLING,
        context_window=context,
        max_output_tokens=max_output,
    )


def _thinking(efforts: frozenset[str], *, always_on: bool = False) -> ModelProfile:
    # Every thinking family (2.5 on) has the full native tool set, a 1M context and 64K output.
    return _chat(
        native=_ALL_NATIVE,
        context=1_048_576,
        max_output=65_536,
        thinking=True,
        always_on=always_on,
        efforts=efforts,
    )


_PROFILES: Final[dict[GeminiFamily, ModelProfile]] = {
    "gemini-1.5": _chat(native=frozenset({"code_execution"}), context=1_048_576, max_output=8192),
    "gemini-2.0-flash": _chat(
        native=frozenset({"web_search", "url_context", "web_fetch", "code_execution"}),
        context=1_048_576,
        max_output=8192,
    ),
    "gemini-2.0-flash-lite": _chat(native=frozenset(), context=1_048_576, max_output=8192),
    "gemini-2.5-pro": _thinking(frozenset(_BUDGET_EFFORTS_PRO), always_on=True),
    "gemini-2.5-flash": _thinking(frozenset(_BUDGET_EFFORTS_FLASH)),
    "gemini-2.5-flash-lite": _thinking(frozenset(_BUDGET_EFFORTS_FLASH)),
    "gemini-3-pro": _thinking(frozenset({"low", "high"}), always_on=True),
    "gemini-3-flash": _thinking(frozenset({"minimal", "low", "medium", "high"}), always_on=True),
    # Fail-closed: text in, text out, instructions; nothing else until the application says so.
    "unknown": ModelProfile(supports_instructions=True),
}


def profile_for(model_name: str) -> ModelProfile:
    """The built-in profile of a Gemini model; unknown names get the fail-closed text-only profile."""
    return _PROFILES[family_of(model_name)]


def traits_for(model_name: str) -> GoogleModelTraits:
    """The wire traits of a Gemini model's family."""
    return _TRAITS[family_of(model_name)]
