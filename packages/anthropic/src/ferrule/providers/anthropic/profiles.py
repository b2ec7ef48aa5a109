"""Fail-closed profiles of the Claude model families served by the Anthropic Messages API.

[`anthropic_profile`][ferrule.providers.anthropic.profiles.anthropic_profile] maps a model name
(an alias such as `claude-sonnet-4-5`, a dated ID such as `claude-sonnet-4-5-20250929`, or a
Bedrock/Vertex spelling) to an [`AnthropicProfile`][ferrule.providers.anthropic.profiles.AnthropicProfile]:
the neutral [`ModelProfile`][ferrule.core.profile.ModelProfile] the agent checks every call against,
plus the Messages API specifics the codec needs (thinking style, effort, server-tool versions, the
required `max_tokens` default). A name no family matches gets the `unknown` profile, which declares
text, images and function tools only, so nothing the model may lack is ever sent.
"""

from __future__ import annotations

import re
from typing import Final
from typing import Literal
from typing import TypeAlias

import msgspec

from ferrule.core.profile import ContentKind
from ferrule.core.profile import ModelProfile
from ferrule.core.profile import NativeToolKind

__all__ = [
    "FAMILIES",
    "UNKNOWN",
    "AnthropicProfile",
    "ThinkingStyle",
    "anthropic_profile",
    "model_profile",
    "normalize_model_name",
]

ThinkingStyle: TypeAlias = Literal["none", "budget", "adaptive_or_budget", "adaptive"]
"""How a family thinks: not at all, with `budget_tokens`, adaptively (budget still accepted), or
adaptively only (a budget is rejected by the API)."""

_BASE_SETTINGS: Final = frozenset({"max_tokens", "stop_sequences", "timeout", "extra_headers", "extra_body"})
_SAMPLING: Final = frozenset({"temperature", "top_p", "top_k"})
_TEXT_IMAGE: Final[frozenset[ContentKind]] = frozenset({"text", "image", "uploaded-file"})
_WITH_DOCUMENTS: Final[frozenset[ContentKind]] = frozenset({"text", "image", "document", "uploaded-file"})
_BUDGET_EFFORTS: Final = frozenset({"minimal", "low", "medium", "high"})
_EFFORTS: Final = frozenset({"low", "medium", "high", "max"})
_EFFORTS_XHIGH: Final = frozenset({"low", "medium", "high", "xhigh", "max"})
_SERVICE_TIERS: Final = frozenset({"auto", "standard_only"})
_ALL_WEB: Final[frozenset[NativeToolKind]] = frozenset({"web_search", "web_fetch", "code_execution"})


class AnthropicProfile(msgspec.Struct, frozen=True, kw_only=True):
    """A Claude family's capabilities: the neutral profile plus Messages API specifics."""

    family: str
    """The family's name, e.g. `"claude-sonnet-4-5"`, or `"unknown"` for the fail-closed fallback."""
    model: ModelProfile
    """The neutral profile every call is checked against before any network I/O."""
    thinking: ThinkingStyle = "none"
    """How extended thinking is requested (`thinking.type` `enabled` with a budget, or `adaptive`)."""
    effort: bool = False
    """`reasoning_effort` is sent as `output_config.effort` (otherwise it selects a thinking budget)."""
    interleaved_thinking_beta: bool = False
    """Thinking between tool calls needs the `interleaved-thinking-2025-05-14` beta header."""
    summarize_thinking: bool = False
    """Ask for summarized thinking text (`thinking.display`); these models omit it by default."""
    forced_tool_choice: bool = True
    """`tool_choice` `any` / `tool` is accepted (without a thinking budget)."""
    web_search_tool: str | None = None
    """The versioned `type` of the web search server tool, when the family has it."""
    web_fetch_tool: str | None = None
    """The versioned `type` of the web fetch server tool, when the family has it."""
    code_execution_tool: str | None = None
    """The versioned `type` of the code execution server tool, when the family has it."""


def _profile(
    family: str,
    *,
    max_output: int | None,
    default_max_tokens: int,
    thinking: ThinkingStyle = "none",
    efforts: frozenset[str] = frozenset(),
    effort: bool = False,
    structured: bool = False,
    sampling: bool = True,
    content: frozenset[ContentKind] = _WITH_DOCUMENTS,
    native: frozenset[NativeToolKind] = frozenset(),
    deferred: bool = False,
    interleaved: bool = False,
    summarize: bool = False,
    forced_tool_choice: bool = True,
    web_search: str | None = None,
    web_fetch: str | None = None,
    code_execution: str | None = None,
    context_window: int | None = 200_000,
) -> AnthropicProfile:
    settings: frozenset[str] = _BASE_SETTINGS | _SAMPLING if sampling else _BASE_SETTINGS
    if thinking in ("budget", "adaptive_or_budget"):
        settings |= frozenset({"thinking_budget_tokens"})
    if thinking != "none":
        settings |= frozenset({"reasoning_summary"})
    return AnthropicProfile(
        family=family,
        model=ModelProfile(
            supports_tools=True,
            supports_parallel_tool_calls=True,
            supports_tool_choice=True,
            supports_instructions=True,
            supports_json_object_output=False,
            supports_json_schema_output=structured,
            default_structured_output_mode="tool",
            supports_thinking=thinking != "none",
            reasoning_efforts=efforts,
            content_kinds=content,
            native_tools=native,
            native_deferred_tools=deferred,
            service_tiers=_SERVICE_TIERS,
            supported_settings=settings,
            context_window=context_window,
            max_output_tokens=max_output,
            default_max_tokens=default_max_tokens,
        ),
        thinking=thinking,
        effort=effort,
        interleaved_thinking_beta=interleaved,
        summarize_thinking=summarize,
        forced_tool_choice=forced_tool_choice,
        web_search_tool=web_search if "web_search" in native else None,
        web_fetch_tool=web_fetch if "web_fetch" in native else None,
        code_execution_tool=code_execution if "code_execution" in native else None,
    )


_WS_2025: Final = "web_search_20250305"
_WS_2026: Final = "web_search_20260209"
_WF_2025: Final = "web_fetch_20250910"
_WF_2026: Final = "web_fetch_20260209"
_CE_2025: Final = "code_execution_20250825"
_CE_2026: Final = "code_execution_20260120"


def _adaptive_only(family: str, *, forced_tool_choice: bool = True) -> AnthropicProfile:
    # Opus 4.7+ / Sonnet 5 / Fable 5: adaptive thinking only, no sampling knobs, `xhigh` effort.
    return _profile(
        family,
        max_output=128_000,
        default_max_tokens=16_384,
        thinking="adaptive",
        efforts=_EFFORTS_XHIGH,
        effort=True,
        structured=True,
        sampling=False,
        native=_ALL_WEB,
        deferred=True,
        summarize=True,
        forced_tool_choice=forced_tool_choice,
        web_search=_WS_2026,
        web_fetch=_WF_2026,
        code_execution=_CE_2026,
    )


def _adaptive_or_budget(family: str, *, max_output: int) -> AnthropicProfile:
    # Opus / Sonnet 4.6: adaptive thinking or a budget, effort, the 2026 server tools.
    return _profile(
        family,
        max_output=max_output,
        default_max_tokens=16_384,
        thinking="adaptive_or_budget",
        efforts=_EFFORTS,
        effort=True,
        structured=True,
        native=_ALL_WEB,
        deferred=True,
        web_search=_WS_2026,
        web_fetch=_WF_2026,
        code_execution=_CE_2026,
    )


def _budget_thinking(
    family: str,
    *,
    max_output: int,
    efforts: frozenset[str] = _BUDGET_EFFORTS,
    effort: bool = False,
    structured: bool = False,
    deferred: bool = False,
    interleaved: bool = True,
    code_execution: str = _CE_2025,
) -> AnthropicProfile:
    # Claude 3.7 to 4.5: a thinking budget, interleaved thinking from Claude 4 on, the 2025 web tools.
    return _profile(
        family,
        max_output=max_output,
        default_max_tokens=16_384,
        thinking="budget",
        efforts=efforts,
        effort=effort,
        structured=structured,
        native=_ALL_WEB,
        deferred=deferred,
        interleaved=interleaved,
        web_search=_WS_2025,
        web_fetch=_WF_2025,
        code_execution=code_execution,
    )


FAMILIES: Final[tuple[tuple[re.Pattern[str], AnthropicProfile], ...]] = tuple(
    (re.compile(pattern), profile)
    for pattern, profile in (
        (r"claude-fable-5", _adaptive_only("claude-fable-5", forced_tool_choice=False)),
        (r"claude-mythos", _adaptive_only("claude-mythos", forced_tool_choice=False)),
        (r"claude-opus-5", _adaptive_only("claude-opus-5")),
        (r"claude-sonnet-5", _adaptive_only("claude-sonnet-5")),
        (r"claude-opus-4-8", _adaptive_only("claude-opus-4-8")),
        (r"claude-opus-4-7", _adaptive_only("claude-opus-4-7")),
        (r"claude-opus-4-6", _adaptive_or_budget("claude-opus-4-6", max_output=128_000)),
        (r"claude-sonnet-4-6", _adaptive_or_budget("claude-sonnet-4-6", max_output=64_000)),
        (
            r"claude-opus-4-5",
            _budget_thinking(
                "claude-opus-4-5",
                max_output=64_000,
                efforts=frozenset({"low", "medium", "high"}),
                effort=True,
                structured=True,
                deferred=True,
                code_execution=_CE_2026,
            ),
        ),
        (
            r"claude-sonnet-4-5",
            _budget_thinking(
                "claude-sonnet-4-5",
                max_output=64_000,
                structured=True,
                deferred=True,
                code_execution=_CE_2026,
            ),
        ),
        (
            r"claude-haiku-4-5",
            _budget_thinking("claude-haiku-4-5", max_output=64_000, structured=True, deferred=True),
        ),
        (r"claude-opus-4-1", _budget_thinking("claude-opus-4-1", max_output=32_000, structured=True)),
        # Claude 4.0: `claude-opus-4-0`, `claude-opus-4-20250514`, `claude-opus-4@20250514`, `claude-opus-4`.
        (r"claude-opus-4(?:-0|-\d{8}|@|$)", _budget_thinking("claude-opus-4", max_output=32_000)),
        (r"claude-sonnet-4(?:-0|-\d{8}|@|$)", _budget_thinking("claude-sonnet-4", max_output=64_000)),
        (r"claude-3-7-sonnet", _budget_thinking("claude-3-7-sonnet", max_output=64_000, interleaved=False)),
        (
            r"claude-3-5-haiku",
            _profile(
                "claude-3-5-haiku",
                max_output=8_192,
                default_max_tokens=8_192,
                native=_ALL_WEB,
                web_search=_WS_2025,
                web_fetch=_WF_2025,
                code_execution=_CE_2025,
            ),
        ),
        (r"claude-3-5-sonnet", _profile("claude-3-5-sonnet", max_output=8_192, default_max_tokens=8_192)),
        (
            r"claude-3-haiku",
            _profile("claude-3-haiku", max_output=4_096, default_max_tokens=4_096, content=_TEXT_IMAGE),
        ),
        (
            r"claude-3-(?:opus|sonnet)",
            _profile("claude-3", max_output=4_096, default_max_tokens=4_096, content=_TEXT_IMAGE),
        ),
    )
)
"""Every known family, most specific pattern first; a name takes the first family whose pattern
matches at its start (after [`normalize_model_name`][ferrule.providers.anthropic.profiles.normalize_model_name])."""

UNKNOWN: Final = _profile(
    "unknown",
    max_output=None,
    default_max_tokens=4_096,
    content=_TEXT_IMAGE,
    context_window=None,
)
"""The fail-closed profile of an unrecognised model: text, images and function tools, no thinking,
no native structured output, no server tools, a `max_tokens` default of 4096."""

# Cloud spellings: `us.anthropic.claude-…-v1:0` (Bedrock), `claude-…@20250514` (Vertex).
_CLOUD_PREFIX: Final = re.compile(r"^(?:[a-z]{2,4}\.)?anthropic\.")
_BEDROCK_SUFFIX: Final = re.compile(r"-v\d+(?::\d+)?$")


def normalize_model_name(model_name: str) -> str:
    """The bare Claude model ID in `model_name`: lower-case, without Bedrock region/vendor prefixes
    or version suffixes (`us.anthropic.claude-haiku-4-5-20251001-v1:0` → `claude-haiku-4-5-20251001`)."""
    name = model_name.strip().lower()
    name = _CLOUD_PREFIX.sub("", name)
    return _BEDROCK_SUFFIX.sub("", name)


def anthropic_profile(model_name: str) -> AnthropicProfile:
    """The profile of `model_name`'s family, or [`UNKNOWN`][ferrule.providers.anthropic.profiles.UNKNOWN]."""
    name = normalize_model_name(model_name)
    for pattern, profile in FAMILIES:
        if pattern.match(name):
            return profile
    return UNKNOWN


def model_profile(model_name: str) -> ModelProfile:
    """The neutral [`ModelProfile`][ferrule.core.profile.ModelProfile] of `model_name`."""
    return anthropic_profile(model_name).model
