"""Helpers shared by the Chat Completions and Responses codecs (internal)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from decimal import Decimal
from decimal import InvalidOperation
from typing import Any
from typing import ParamSpec
from typing import cast

import msgspec

from ferrule.core.errors import ERROR_CLASSES
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import ProviderError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.http import classify_status
from ferrule.core.messages import FinishReason

OPENAI = "openai"
"""Provider name of OpenAI itself."""

_P = ParamSpec("_P")


def json_encoded(build: Callable[_P, dict[str, Any]]) -> Callable[_P, bytes]:
    """`build`, with the body it returns encoded as JSON bytes (same parameters)."""

    def encode(*args: _P.args, **kwargs: _P.kwargs) -> bytes:
        return msgspec.json.encode(build(*args, **kwargs))

    return encode


_CHAT_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "model_length": "length",
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "tool_use": "tool_call",
    "content_filter": "content_filter",
    "safety": "content_filter",
    "error": "error",
    "insufficient_system_resource": "error",
}


def normalize_finish_reason(raw: str | None) -> FinishReason | None:
    """The portable finish reason for a provider's raw one (`None` stays `None`)."""
    if raw is None:
        return None
    return _CHAT_FINISH.get(raw, "other")


def timestamp(seconds: Any) -> datetime | None:
    """A UTC datetime from a Unix timestamp, or `None` when it is missing or absurd."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def as_int(value: Any) -> int:
    """A non-negative token counter from an untrusted value (anything else counts as 0)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and value == value and 0 <= value < 2**63:
        return int(value)
    return 0


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty dict."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty list."""
    return cast("list[Any]", value) if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    """`value` when it is a string, else `None`."""
    return value if isinstance(value, str) else None


def as_decimal(value: Any) -> Decimal | None:
    """A cost reported by the provider, as an exact decimal."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        result = Decimal(str(value))
    except InvalidOperation:
        return None
    return result if result.is_finite() else None


class StableIds:
    """Tool call IDs for servers that send none: deterministic for the same response, unique across responses."""

    __slots__ = ("_base", "_count")

    def __init__(self, seed: str | bytes | None = None) -> None:
        if seed is None:
            seed = uuid.uuid4().hex
        if isinstance(seed, str):
            seed = seed.encode("utf-8", "replace")
        import hashlib  # with the first response that needs IDs, not with the provider

        self._base = hashlib.blake2b(seed, digest_size=8).hexdigest()
        self._count = 0

    def next(self) -> str:
        """The next ID of this response."""
        self._count += 1
        return f"call_{self._base}_{self._count}"


_CODE_CATEGORIES: dict[str, ErrorCategory] = {
    "rate_limit_exceeded": ErrorCategory.RATE_LIMIT,
    "rate_limit_error": ErrorCategory.RATE_LIMIT,
    "too_many_requests": ErrorCategory.RATE_LIMIT,
    "server_error": ErrorCategory.SERVER,
    "internal_error": ErrorCategory.SERVER,
    "internal_server_error": ErrorCategory.SERVER,
    "api_error": ErrorCategory.SERVER,
    "overloaded_error": ErrorCategory.SERVER,
    "service_unavailable": ErrorCategory.SERVER,
    "timeout": ErrorCategory.TIMEOUT,
    "content_filter": ErrorCategory.CONTENT_FILTER,
    "content_policy_violation": ErrorCategory.CONTENT_FILTER,
    "invalid_prompt": ErrorCategory.BAD_REQUEST,
    "invalid_request_error": ErrorCategory.BAD_REQUEST,
    "context_length_exceeded": ErrorCategory.BAD_REQUEST,
    "insufficient_quota": ErrorCategory.BAD_REQUEST,
    "authentication_error": ErrorCategory.AUTH,
    "invalid_api_key": ErrorCategory.AUTH,
    "permission_error": ErrorCategory.AUTH,
}


def category_for_code(code: str | int | None, default: ErrorCategory = ErrorCategory.SERVER) -> ErrorCategory:
    """The error category of a provider error code found inside a 200 body or a stream event."""
    if isinstance(code, bool):
        return default
    if isinstance(code, int):
        if 200 <= code < 300:
            return default
        return classify_status(code) if 100 <= code < 1000 else default
    if isinstance(code, str):
        if code.isdigit():
            return category_for_code(int(code), default)
        return _CODE_CATEGORIES.get(code.lower(), default)
    return default


def in_band_error(
    error: Any,
    *,
    provider_name: str | None,
    model_name: str | None,
    where: str,
    default: ErrorCategory = ErrorCategory.SERVER,
) -> ProviderError:
    """The typed error for an error object sent inside a successful HTTP response or a stream."""
    info = as_dict(error)
    if not info and isinstance(error, str):
        info = {"message": error}
    code = info.get("code")
    kind = info.get("type")
    category = category_for_code(code if code is not None else kind, default)
    if category is default and isinstance(kind, str):
        category = _CODE_CATEGORIES.get(kind.lower(), default)
    message = as_str(info.get("message")) or "the provider reported an error without a message"
    code_text = str(code) if isinstance(code, str | int) and not isinstance(code, bool) else as_str(kind)
    return ERROR_CLASSES[category](
        f"{where}: {message[:1024]}",
        provider_name=provider_name,
        model_name=model_name,
        code=code_text[:128] if code_text else None,
        details={"in_band": True},
    )


def shape_errors(
    what: str, provider_name: str | None, model_name: str | None
) -> Callable[[Exception], ProviderError]:
    """A converter from an unexpected-shape exception to `ResponseDecodeError`, for the codecs' safety net."""

    def convert(exc: Exception) -> ProviderError:
        return ResponseDecodeError(
            f"{what} has an unexpected shape ({type(exc).__name__}: {str(exc)[:200]})",
            provider_name=provider_name,
            model_name=model_name,
        )

    return convert


SHAPE_ERRORS = (KeyError, IndexError, TypeError, ValueError, AttributeError, msgspec.ValidationError)
"""Exceptions an unexpected (but well-formed) document can cause; the codecs map them to `ResponseDecodeError`."""
