"""The error taxonomy shared by every ferrule package.

Errors fall into two families:

* [`UserError`][ferrule.core.errors.UserError] and its subclasses: the application asked for something
  ferrule cannot do (a feature the model does not support, a malformed schema, a URL the policy
  forbids). They are raised before any network I/O and are never retried.
* [`ProviderError`][ferrule.core.errors.ProviderError] and its subclasses: a model provider, or the
  connection to it, failed. Each carries a stable [`ErrorCategory`][ferrule.core.errors.ErrorCategory]
  that retry policies act on, the HTTP status, the provider's request ID and, only when the
  application opted in, a bounded prefix of the raw body with credentials removed.
"""

from __future__ import annotations

import enum
from typing import Any
from typing import ClassVar

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ContentFilterError",
    "ErrorCategory",
    "FerruleError",
    "InvalidCredentialError",
    "MissingCredentialError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeoutError",
    "RateLimitError",
    "ResponseDecodeError",
    "ResponseTooLargeError",
    "ServerError",
    "UnsupportedContentError",
    "UnsupportedFeatureError",
    "UrlPolicyError",
    "UserError",
]


class FerruleError(Exception):
    """Base class of every exception ferrule raises on purpose."""


class UserError(FerruleError):
    """The application asked for something that cannot work; fix the call, do not retry it."""


class MissingCredentialError(UserError):
    """A provider needs a credential that was neither passed nor set in its environment variable.

    Raised when the provider is built, before any I/O; `env_vars` names the variables that were
    looked at (never their values), so a command-line tool can tell this apart from other errors.
    """

    def __init__(self, message: str, *, env_vars: tuple[str, ...] = ()) -> None:
        self.env_vars = env_vars
        """The environment variables the credential is read from, e.g. `("OPENAI_API_KEY",)`."""
        super().__init__(message)


class UnsupportedFeatureError(UserError):
    """A call asked a model for a feature its profile does not declare.

    Raised before any network I/O, so no paid request is sent.
    """

    def __init__(self, feature: str, *, model: str, hint: str | None = None) -> None:
        self.feature = feature
        """The feature that was asked for, e.g. `"tools"` or `"reasoning_effort='max'"`."""
        self.model = model
        """`provider:model` of the model that lacks it."""
        self.hint = hint
        """What to do instead, when there is a suggestion."""
        message = f"{model} does not support {feature}"
        if hint:
            message += f"; {hint}"
        super().__init__(message)


class UnsupportedContentError(UnsupportedFeatureError):
    """A message part or user-content item that a provider's API has no way to take.

    Raised by the provider codecs while the request is encoded, before any network I/O, so a history
    is never sent with a part silently left out. `kind` is the item's JSON tag (its `part_kind`, or
    its `kind` for user content, e.g. `"speech"` or `"audio-url"`).
    """

    def __init__(self, kind: str, *, provider: str, model: str | None = None, reason: str) -> None:
        self.kind = kind
        """The JSON tag of the refused part or content item, e.g. `"speech"` or `"video-url"`."""
        self.provider = provider
        """The provider whose API cannot take it, e.g. `"anthropic"`."""
        self.reason = reason
        """Why it cannot be sent, and what to do instead."""
        super().__init__(f"{kind!r} content", model=f"{provider}:{model}" if model else provider, hint=reason)


class InvalidCredentialError(UserError):
    """A configured credential or header value cannot be sent safely; refused before any I/O.

    The message names what was wrong (a trailing newline, a non-ASCII character, too short) and
    where, never the value itself.
    """

    def __init__(self, what: str, reason: str) -> None:
        self.what = what
        """What was refused, e.g. `"the API key"` or `"the 'authorization' header"`."""
        self.reason = reason
        """Why it was refused."""
        super().__init__(f"{what} cannot be used: {reason}")


class UrlPolicyError(UserError):
    """A URL was rejected by the [`UrlPolicy`][ferrule.core.url_policy.UrlPolicy] before any connection."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        """The rejected URL with any user-info (credentials) removed."""
        self.reason = reason
        """Why the policy rejected it."""
        super().__init__(f"URL {url!r} is not allowed: {reason}")


class ErrorCategory(enum.StrEnum):
    """Stable categories of provider failures; retry policies act on these, not on status codes."""

    RATE_LIMIT = "rate_limit"
    """The provider throttled the request (HTTP 429 or an equivalent error body)."""
    SERVER = "server"
    """The provider failed (HTTP 5xx, overloaded)."""
    TIMEOUT = "timeout"
    """A connect, first-byte or total timeout expired."""
    CONNECTION = "connection"
    """The connection could not be made or broke before the response was complete."""
    DECODE = "decode"
    """The response could not be decoded (malformed JSON, truncated stream, protocol violation)."""
    BAD_REQUEST = "bad_request"
    """The provider rejected the request as invalid (HTTP 400, 404, 422, ...)."""
    AUTH = "auth"
    """Authentication or authorization failed (HTTP 401, 403)."""
    CONTENT_FILTER = "content_filter"
    """The provider refused the request or response on content-policy grounds."""
    RESPONSE_TOO_LARGE = "response_too_large"
    """The response body or a stream line exceeded the configured limit."""


class ProviderError(FerruleError):
    """A model provider request failed.

    The message never contains credentials; `body` is `None` unless the application opted in to
    capturing it, and then holds at most the configured number of bytes with credentials redacted.
    """

    category: ClassVar[ErrorCategory] = ErrorCategory.SERVER
    """The stable category of this error class."""

    def __init__(
        self,
        message: str,
        *,
        provider_name: str | None = None,
        model_name: str | None = None,
        status_code: int | None = None,
        request_id: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
        body: str | None = None,
        body_truncated: bool = False,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.message = message
        """A human-readable description, with the provider's own message when it sent one."""
        self.provider_name = provider_name
        """The provider that failed, e.g. `"openai"`."""
        self.model_name = model_name
        """The model the request was for."""
        self.status_code = status_code
        """The HTTP status, when the failure came with a response."""
        self.request_id = request_id
        """The provider's request ID, for support tickets."""
        self.code = code
        """The provider's machine-readable error code or type, if any."""
        self.retry_after = retry_after
        """Seconds the provider asked the client to wait, from `Retry-After`."""
        self.body = body
        """A bounded, redacted prefix of the raw response body; `None` unless capture was enabled."""
        self.body_truncated = body_truncated
        """Whether `body` is a prefix of a longer body."""
        self.details = details
        """Extra structured information for observers; never contains credentials."""
        super().__init__(self._render())

    def _render(self) -> str:
        where = ":".join(p for p in (self.provider_name, self.model_name) if p)
        parts = [f"[{self.category.value}]"]
        if where:
            parts.append(where)
        if self.status_code is not None:
            parts.append(f"HTTP {self.status_code}")
        text = " ".join(parts) + f": {self.message}"
        if self.request_id:
            text += f" (request id {self.request_id})"
        return text

    @property
    def retryable(self) -> bool:
        """Whether the category is one that a retry policy may retry by default."""
        return self.category in _RETRYABLE


class RateLimitError(ProviderError):
    """The provider throttled the request; wait `retry_after` seconds when it is set."""

    category = ErrorCategory.RATE_LIMIT


class ServerError(ProviderError):
    """The provider failed with a 5xx status or reported that it is overloaded."""

    category = ErrorCategory.SERVER


class ProviderTimeoutError(ProviderError):
    """A connect, first-byte or total timeout expired before the response was complete."""

    category = ErrorCategory.TIMEOUT


class ProviderConnectionError(ProviderError):
    """The connection failed or broke before the response was complete."""

    category = ErrorCategory.CONNECTION


class ResponseDecodeError(ProviderError):
    """The provider's response could not be decoded into ferrule messages."""

    category = ErrorCategory.DECODE


class BadRequestError(ProviderError):
    """The provider rejected the request as invalid; retrying the same request will not help."""

    category = ErrorCategory.BAD_REQUEST


class AuthenticationError(ProviderError):
    """The credential was missing, wrong or lacks permission; check the API key."""

    category = ErrorCategory.AUTH


class ContentFilterError(ProviderError):
    """The provider refused the request or response on content-policy grounds."""

    category = ErrorCategory.CONTENT_FILTER


class ResponseTooLargeError(ProviderError):
    """The decompressed response body or one stream line exceeded the configured limit."""

    category = ErrorCategory.RESPONSE_TOO_LARGE


_RETRYABLE = frozenset(
    {
        ErrorCategory.RATE_LIMIT,
        ErrorCategory.SERVER,
        ErrorCategory.TIMEOUT,
        ErrorCategory.CONNECTION,
        ErrorCategory.DECODE,
    }
)

ERROR_CLASSES: dict[ErrorCategory, type[ProviderError]] = {
    cls.category: cls
    for cls in (
        RateLimitError,
        ServerError,
        ProviderTimeoutError,
        ProviderConnectionError,
        ResponseDecodeError,
        BadRequestError,
        AuthenticationError,
        ContentFilterError,
        ResponseTooLargeError,
    )
}
"""The error class for each category, for code that classifies failures generically."""
