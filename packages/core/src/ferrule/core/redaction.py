"""Keeping credentials out of everything ferrule shows: one [`Redactor`][ferrule.core.redaction.Redactor].

A provider (and an MCP client) builds one `Redactor` from its configured secrets, and every path that
describes a failure goes through it: messages of HTTP and transport errors, errors that codecs build
from in-band error bodies and stream events, redirect locations, request IDs, debug log lines and
events. [`Redactor.scrub`][ferrule.core.redaction.Redactor.scrub] cleans an exception in place (its
`args`, notes and attributes) and cuts every link of its `__cause__` / `__context__` chain that is
not a ferrule error, since a foreign exception (an `httpx2` error holding the request and its
credential headers, an SDK error) cannot be cleaned reliably.

[`check_credential`][ferrule.core.redaction.check_credential] refuses, before any I/O, a credential
that could not be sent or redacted reliably: one with control characters (a trailing newline, CR,
NUL), whitespace, non-ASCII characters, or fewer than `MIN_SECRET_CHARS` characters.
"""

from __future__ import annotations

import binascii
import functools
import logging
import re
import urllib.parse
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from contextvars import ContextVar
from contextvars import Token
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any
from typing import Final
from typing import Self
from typing import cast

import msgspec

from .errors import FerruleError
from .errors import InvalidCredentialError
from .errors import UserError

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "HTTP_LOGGERS",
    "MIN_SECRET_CHARS",
    "REDACTED",
    "Redactor",
    "check_credential",
    "check_header_value",
    "redactor_for",
    "is_sensitive_header",
    "is_sensitive_param",
    "redact_headers",
    "redact_logs_of",
    "redact_url",
]

REDACTED: Final = "<redacted>"
"""What replaces a credential in headers, messages and captured bodies."""

MIN_SECRET_CHARS: Final = 4
"""Shortest secret searched for: a shorter string would match ordinary words in every message.
`check_credential` refuses API keys shorter than this."""

_SENSITIVE_NAMES: Final = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "set-cookie"}
)
_SENSITIVE_PARTS: Final = ("token", "secret", "key", "auth", "password", "cookie", "credential", "signature")
# The parts searched in one pass in C: every request's headers are checked.
_SENSITIVE_PART: Final = re.compile("|".join(_SENSITIVE_PARTS))
_SENSITIVE_PARAM = re.compile(r"key|token|secret|auth|sig|password|credential|session", re.IGNORECASE)

# Well-known credential shapes, caught even when they were never configured (a key echoed from
# another account, a token in a proxy's error page).
_TOKEN_PATTERN = re.compile(
    r"(?P<scheme>\b[Bb][Ee][Aa][Rr][Ee][Rr]\s+)[A-Za-z0-9._~+/=-]{8,}"
    r"|\b(?:sk-[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{30,}|ya29\.[A-Za-z0-9._-]{20,}"
    r"|xai-[A-Za-z0-9]{20,}|gsk_[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,})"
)
# Literal parts every shape above contains: testing for them first is several times faster than
# running the pattern over a text that holds none (the usual case).
_TOKEN_MARKS: Final = ("sk-", "AIza", "ya29.", "xai-", "gsk_", "hf_")
_SCHEME_VALUE = re.compile(r"([A-Za-z][A-Za-z0-9._-]*) +(\S+)")


def is_sensitive_header(name: str) -> bool:
    """Whether a header with this name conventionally carries a credential (and must be redacted)."""
    lower = name.lower()
    return lower in _SENSITIVE_NAMES or _SENSITIVE_PART.search(lower) is not None


def is_sensitive_param(name: str) -> bool:
    """Whether a query parameter with this name conventionally carries a credential (`key`, `token`, ...)."""
    return _SENSITIVE_PARAM.search(name) is not None


def redact_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """Headers for logs and diagnostics: lower-case names, credential-like values replaced by `<redacted>`."""
    items = cast("Mapping[str, str]", headers).items() if isinstance(headers, Mapping) else headers
    result: dict[str, str] = {}
    for name, value in items:
        lower = name.lower()
        shown = REDACTED if is_sensitive_header(lower) else value
        result[lower] = f"{result[lower]}, {shown}" if lower in result else shown
    return result


def _describe_char(char: str) -> str:
    names = {
        "\n": "a line feed",
        "\r": "a carriage return",
        "\x00": "a NUL character",
        "\t": "a tab",
        " ": "a space",
    }
    if char in names:
        return names[char]
    if ord(char) < 0x20 or ord(char) == 0x7F:
        return f"the control character U+{ord(char):04X}"
    return f"the non-ASCII character U+{ord(char):04X}"


def check_credential(value: str, what: str = "the API key") -> None:
    """Refuse a credential that cannot be sent in a header or kept out of messages; the error never shows it.

    A credential must be printable ASCII without whitespace and at least `MIN_SECRET_CHARS` long.
    Nothing is stripped silently: a key read from a file with its trailing newline is refused with a
    hint to strip it, so the key that is sent is always exactly the key that was configured.
    """
    for index, char in enumerate(value):
        if not "!" <= char <= "~":
            hint = "; a key read from a file or a terminal often ends with a newline: pass key.strip()"
            raise InvalidCredentialError(
                what,
                f"it contains {_describe_char(char)} at position {index + 1} of {len(value)}"
                + (hint if char in "\r\n \t" else ""),
            )
    if len(value) < MIN_SECRET_CHARS:
        raise InvalidCredentialError(
            what,
            f"it has {len(value)} characters; ferrule needs at least {MIN_SECRET_CHARS} to keep it out of "
            "messages (a server that needs no key needs no api_key)",
        )


def check_header_value(name: str, value: str) -> None:
    """Refuse a header value with control characters or non-ASCII characters before any I/O.

    Spaces and tabs inside the value are allowed (`Bearer <token>`). The error names the header,
    never the value: `InvalidCredentialError` for a credential header, `UserError` for another.
    """
    for index, char in enumerate(value):
        if not (" " <= char <= "~" or char == "\t"):
            reason = f"its value contains {_describe_char(char)} at position {index + 1} of {len(value)}"
            if is_sensitive_header(name):
                raise InvalidCredentialError(f"the {name!r} header", reason)
            raise UserError(f"the {name!r} header cannot be sent: {reason}")


def _forms(secret: str) -> Iterable[str]:
    """Every spelling of `secret` that a message may contain."""
    bases = {secret, secret.strip(" \t\r\n\x00")}
    for value in tuple(bases):
        match = _SCHEME_VALUE.fullmatch(value)
        if match is not None:
            # `Bearer <token>`: the token is the secret, the scheme is not (messages keep it).
            bases.discard(value)
            bases.add(match.group(2))
            if match.group(1).lower() == "basic":
                bases.update(_basic_parts(match.group(2)))
    for value in bases:
        yield value
        yield repr(value)[1:-1]  # a str repr: '\n' shown as \n
        yield repr(value.encode("utf-8", "backslashreplace"))[2:-1]  # a bytes repr (h11's header errors)
        yield msgspec.json.encode(value).decode()[1:-1]  # JSON-escaped, as servers echo it in bodies
        yield urllib.parse.quote(value, safe="")
        yield urllib.parse.quote(value)
        yield urllib.parse.quote_plus(value, safe="")  # how httpx2 encodes a query parameter


def _basic_parts(token: str) -> Iterable[str]:
    """The decoded `user:password` of a Basic credential, and its password."""
    import base64  # with the first Basic credential, not with the provider

    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return
    yield decoded
    _, _, password = decoded.partition(":")
    if password:
        yield password


class Redactor:
    """Replaces configured secrets, and well-known credential shapes, in text, headers and exceptions.

    Each secret is matched in every form a message can carry it: as configured, without surrounding
    whitespace, repr-escaped (`\\n`, `\\r\\n`, `\\x00`, as `str` and `bytes` reprs show it),
    JSON-escaped, percent-encoded (path and query style), and for an `Authorization`-style value
    also the token after its scheme (for `Basic`, the decoded `user:password` and the password).
    Forms shorter than `MIN_SECRET_CHARS` are not searched. Build one per set of secrets and reuse it:
    the forms are compiled into one pattern.
    """

    __slots__ = ("_forms", "secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets: tuple[str, ...] = tuple(dict.fromkeys(s for s in secrets if s))
        """The secrets as configured (without duplicates)."""
        forms = {form for secret in self.secrets for form in _forms(secret) if len(form) >= MIN_SECRET_CHARS}
        # Longest first, so a secret that contains another is replaced whole. Plain substring
        # tests are faster than one alternation pattern on both short and long texts.
        self._forms = tuple(sorted(forms, key=lambda form: (-len(form), form)))

    def extend(self, secrets: Iterable[str]) -> Redactor:
        """A redactor of these secrets and `secrets` (this one when there is nothing new)."""
        extra = tuple(s for s in secrets if s and s not in self.secrets)
        return Redactor((*self.secrets, *extra)) if extra else self

    def text(self, text: str) -> str:
        """`text` with every form of every secret and every well-known credential shape replaced."""
        for form in self._forms:
            if form in text:
                text = text.replace(form, REDACTED)
        if any(mark in text for mark in _TOKEN_MARKS) or "bearer" in text.lower():
            text = _TOKEN_PATTERN.sub(_redact_match, text)
        return text

    def prefix(self, text: str, complete: bool) -> str:
        """Redact a body prefix; when it was cut, also hide a partial secret at its very end."""
        text = self.text(text)
        if complete:
            return text
        for secret in self.secrets:
            for size in range(min(len(secret) - 1, len(text)), MIN_SECRET_CHARS - 1, -1):
                if text.endswith(secret[:size]):
                    return text[:-size] + REDACTED
        return text

    def headers(self, headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
        """`redact_headers`, then every secret removed from the remaining values (a header echoing a key)."""
        return {name: self.text(value) for name, value in redact_headers(headers).items()}

    def url(self, url: str) -> str:
        """A URL for display: user-info and credential-like query values removed, then every secret."""
        return self.text(redact_url(url))

    def value(self, value: Any) -> Any:
        """`value` with secrets removed from its strings (in dicts, lists and tuples too); other objects as they are."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            items = cast("dict[Any, Any]", value)
            return {self.value(k): self.value(v) for k, v in items.items()}
        if isinstance(value, list):
            return [self.value(v) for v in cast("list[Any]", value)]
        if isinstance(value, tuple):
            return tuple(self.value(v) for v in cast("tuple[Any, ...]", value))
        return value

    def scrub(self, exc: BaseException) -> None:
        """Clean `exc` in place: its `args`, notes and attributes, and every ferrule error it is chained to.

        A `__cause__` or `__context__` that is not a `FerruleError` is cut: a foreign exception may
        hold objects (an `httpx2.Request` with its credential headers) that cannot be cleaned.
        """
        self._scrub(exc, set())

    def _scrub(self, exc: BaseException, seen: set[int]) -> None:
        if id(exc) in seen:
            return
        seen.add(id(exc))
        exc.args = self.value(exc.args)
        for name, attribute in list(vars(exc).items()):
            cleaned = self.value(attribute)
            if cleaned is not attribute:
                setattr(exc, name, cleaned)
        for link in ("__cause__", "__context__"):
            linked = cast("BaseException | None", getattr(exc, link))
            if linked is None:
                continue
            if isinstance(linked, FerruleError):
                self._scrub(linked, seen)
            else:
                setattr(exc, link, None)
        if isinstance(exc, BaseExceptionGroup):
            for member in cast("BaseExceptionGroup[BaseException]", exc).exceptions:
                self._scrub(member, seen)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Used as `with redactor:`, scrub any `Exception` leaving the block (cancellation passes untouched)."""
        if isinstance(exc, Exception):
            self.scrub(exc)

    def in_logs(self) -> _LogScope:
        """A context manager under which third-party log records (see `redact_logs_of`) go through this redactor.

        Scoped with a context variable, so only records logged by this task (and tasks it starts
        inside the block) are affected.
        """
        return _LogScope(lambda: self)

    @staticmethod
    def lazily_in_logs(source: Callable[[], Redactor]) -> _LogScope:
        """Like `in_logs`, for a redactor that `source` builds only if a record is actually emitted."""
        return _LogScope(source)

    def __repr__(self) -> str:
        return f"Redactor({len(self.secrets)} secrets)"


HTTP_LOGGERS: Final = (
    "httpx2",
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "httpcore2.socks",
)
"""The HTTP client's loggers; at DEBUG, httpcore2 logs every response's headers (a server may echo a key)."""

_ACTIVE: ContextVar[Callable[[], Redactor] | None] = ContextVar("ferrule_active_redactor", default=None)


class _LogScope:
    __slots__ = ("_source", "_token")

    def __init__(self, source: Callable[[], Redactor]) -> None:
        self._source = source
        self._token: Token[Callable[[], Redactor] | None] | None = None

    def __enter__(self) -> None:
        self._token = _ACTIVE.set(self._source)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._token is not None:
            _ACTIVE.reset(self._token)


class _ActiveRedactorFilter(logging.Filter):
    """Redacts a record with the redactor active where it was logged; records elsewhere pass unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        source = _ACTIVE.get()
        if source is not None:
            redactor = source()
            message = record.getMessage()
            cleaned = redactor.text(message)
            if cleaned != message:
                record.msg, record.args = cleaned, None
        return True


_FILTER: Final = _ActiveRedactorFilter()


def redact_logs_of(names: Iterable[str]) -> None:
    """Make the records of these (third-party) loggers go through the redactor of `Redactor.in_logs`.

    Adds one shared filter to each logger, once. A filter runs only for records that are actually
    emitted, so this costs nothing while those loggers are below their level.
    """
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def _redact_match(match: re.Match[str]) -> str:
    return (match.group("scheme") or "") + REDACTED


@functools.lru_cache(maxsize=64)
def redactor_for(secrets: tuple[str, ...]) -> Redactor:
    """A shared redactor of `secrets` (for the function-style helpers that take secrets per call)."""
    return Redactor(secrets)


def redact_url(url: str | httpx2.URL) -> str:
    """`url` for display: user-info removed and the values of key/token-like query parameters hidden."""
    import httpx2  # loaded by every transport already; this module alone does not need it

    try:
        parsed = url if isinstance(url, httpx2.URL) else httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError, ValueError):
        return _redact_unparsed(str(url))
    if not parsed.is_absolute_url:
        return _redact_unparsed(str(url))
    if parsed.userinfo:
        parsed = parsed.copy_with(username=None, password=None)
    if parsed.query:
        params = [
            (name, REDACTED if is_sensitive_param(name) else value)
            for name, value in parsed.params.multi_items()
        ]
        parsed = parsed.copy_with(params=params)
    return str(parsed)


def _redact_unparsed(text: str) -> str:
    # Not a URL we can take apart: drop the whole query and anything that looks like user-info.
    return re.sub(r"(^|//)[^/?#]*@", r"\1", text.split("?", 1)[0])
