"""Which URLs ferrule may connect to: HTTPS-only and public-network-only unless explicitly allowed.

One [`UrlPolicy`][ferrule.core.url_policy.UrlPolicy] is checked by providers (on `base_url` and on
every request), by the agent for user-supplied content URLs and by MCP clients, so a custom
transport or a direct model call cannot silently bypass it. The check is purely syntactic: host
names are never resolved (see `docs/security.md` for what that means and how to close the gap).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from typing import TYPE_CHECKING
from typing import Final

import msgspec
import msgspec.structs

from .errors import UrlPolicyError
from .redaction import redact_url

if TYPE_CHECKING:
    # Imported where a URL is parsed: importing the core (and a provider package) stays cheap.
    import httpx2

__all__ = ["UrlPolicy", "redact_url", "url_origin"]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}

# Name suffixes that never name a host on the public internet: RFC 6761 / 6762 / 8375 special-use
# names, ICANN's reserved `.internal`, and names that common home and corporate resolvers answer
# locally. A name ending in one of these reaches a private machine whatever DNS says.
_LOCAL_SUFFIXES: Final = (
    "localhost",
    "local",
    "internal",
    "home.arpa",
    "localdomain",
    "lan",
    "intranet",
    "corp",
    "home",
    "private",
)

_HOST_CHARS = re.compile(r"[a-z0-9._-]+")
_NUMERIC_LABEL = re.compile(r"(?:[0-9]+|0x[0-9a-f]*)")

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Every IPv4 range that is not globally routable unicast, with the reason shown to the user.
_BLOCKED_V4: Final[tuple[tuple[ipaddress.IPv4Network, str], ...]] = (
    (_V4("0.0.0.0/8"), "an unspecified ('this network') address"),
    (_V4("10.0.0.0/8"), "a private address"),
    (_V4("100.64.0.0/10"), "a shared (carrier-grade NAT) address"),
    (_V4("127.0.0.0/8"), "a loopback address"),
    (_V4("169.254.0.0/16"), "a link-local address (this includes cloud metadata services)"),
    (_V4("172.16.0.0/12"), "a private address"),
    (_V4("192.0.0.0/24"), "a reserved (IETF protocol assignment) address"),
    (_V4("192.0.2.0/24"), "a documentation address"),
    (_V4("192.88.99.0/24"), "a reserved (6to4 relay) address"),
    (_V4("192.168.0.0/16"), "a private address"),
    (_V4("198.18.0.0/15"), "a reserved (benchmarking) address"),
    (_V4("198.51.100.0/24"), "a documentation address"),
    (_V4("203.0.113.0/24"), "a documentation address"),
    (_V4("224.0.0.0/4"), "a multicast address"),
    (_V4("240.0.0.0/4"), "a reserved (or broadcast) address"),
)

# IPv6 outside 2000::/3 is rejected wholesale (fail closed); these are the special ranges inside it,
# plus the loopback/unspecified addresses checked before the embedding forms below.
_BLOCKED_V6: Final[tuple[tuple[ipaddress.IPv6Network, str], ...]] = (
    (_V6("2001::/32"), "a Teredo tunnelling address"),
    (_V6("2001:2::/48"), "a reserved (benchmarking) address"),
    (_V6("2001:10::/28"), "a reserved (ORCHID) address"),
    (_V6("2001:db8::/32"), "a documentation address"),
    (_V6("3fff::/20"), "a documentation address"),
)
_GLOBAL_V6: Final = _V6("2000::/3")
_MAPPED_V6: Final = _V6("::ffff:0:0/96")
_COMPAT_V6: Final = _V6("::/96")
_NAT64_V6: Final = _V6("64:ff9b::/96")
_SIX_TO_FOUR: Final = _V6("2002::/16")
_NON_GLOBAL_V6: Final[tuple[tuple[ipaddress.IPv6Network, str], ...]] = (
    (_V6("64:ff9b:1::/48"), "a private (local-use NAT64) address"),
    (_V6("100::/64"), "a reserved (discard-only) address"),
    (_V6("fc00::/7"), "a private (unique local) address"),
    (_V6("fe80::/10"), "a link-local address"),
    (_V6("fec0::/10"), "a private (site-local) address"),
    (_V6("ff00::/8"), "a multicast address"),
)

_HOW_TO_ALLOW_PRIVATE = (
    "to reach a local server, allow its exact origin with UrlPolicy.local('{origin}'); "
    "UrlPolicy(allow_private=True) allows every private address and is dangerous"
)


# Bounds the allowed-URL cache: entries, and the length of a URL worth remembering.
_MAX_CACHED_URLS = 512
_MAX_CACHED_URL_CHARS = 2048


class UrlPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Which URLs may be fetched: HTTPS to public hosts by default, plus explicitly allowed origins.

    `allowed_origins` holds exact `scheme://host:port` origins (e.g. a local LLM server at
    `http://127.0.0.1:8080`) that are allowed even though they are plain HTTP or private; the two
    flags relax the whole policy and are dangerous outside development. URLs carrying credentials
    in their user-info part are always rejected.
    """

    allow_http: bool = False
    """Allow plain `http://` to any host. Dangerous: traffic and credentials travel unencrypted."""
    allow_private: bool = False
    """Allow private, loopback, link-local and other non-public hosts. Dangerous: enables SSRF."""
    allowed_origins: frozenset[str] = frozenset()
    """Exact origins (`scheme://host[:port]`) always allowed, e.g. `"http://127.0.0.1:11434"`."""

    def __post_init__(self) -> None:
        normalized = frozenset(_normalize_origin(origin) for origin in self.allowed_origins)
        if normalized != self.allowed_origins:
            msgspec.structs.force_setattr(self, "allowed_origins", normalized)

    @classmethod
    def local(cls, *origins: str) -> UrlPolicy:
        """The default policy plus the given exact origins, e.g. `UrlPolicy.local("http://127.0.0.1:8080")`."""
        return cls(allowed_origins=frozenset(origins))

    def check(self, url: str | httpx2.URL) -> httpx2.URL:
        """Return `url` parsed, or raise `UrlPolicyError` saying why it is not allowed and how to allow it."""
        import httpx2

        text = str(url)
        # Providers check the same few URLs on every request. The verdict depends only on the
        # (frozen, hashable) policy and the URL text, so allowed URLs are remembered in a bounded
        # LRU; rejections are never cached and re-raise with their full message each time.
        if len(text) <= _MAX_CACHED_URL_CHARS:
            parsed = UrlPolicy._check_cached(self, text)
            return url if isinstance(url, httpx2.URL) else parsed
        return self._check(url, text)

    @staticmethod
    @functools.lru_cache(maxsize=_MAX_CACHED_URLS)
    def _check_cached(policy: UrlPolicy, text: str) -> httpx2.URL:
        # httpx2.URL is immutable, so sharing one parsed instance between callers is safe.
        return policy._check(text, text)

    def _check(self, url: str | httpx2.URL, text: str) -> httpx2.URL:
        import httpx2

        try:
            parsed = url if isinstance(url, httpx2.URL) else httpx2.URL(url)
        except (httpx2.InvalidURL, TypeError, ValueError) as exc:
            raise UrlPolicyError(redact_url(text), f"it is not a valid URL ({exc})") from None
        shown = redact_url(parsed)
        scheme = parsed.scheme
        if scheme not in _DEFAULT_PORTS:
            what = f"scheme {scheme!r}" if scheme else "a relative URL (no scheme)"
            raise UrlPolicyError(shown, f"{what} is not allowed; use an absolute https:// URL")
        if parsed.userinfo:
            raise UrlPolicyError(
                shown,
                "URLs with credentials in them (user:password@) are never allowed; "
                "pass credentials as the provider's api_key or headers instead",
            )
        host, address = _classify_host(parsed.raw_host, shown)
        port = parsed.port if parsed.port is not None else _DEFAULT_PORTS[scheme]
        if not 0 < port < 65536:
            raise UrlPolicyError(shown, f"port {port} is out of range")
        origin = _format_origin(scheme, host, port, address)
        if origin in self.allowed_origins:
            return parsed
        if scheme == "http" and not self.allow_http:
            raise UrlPolicyError(
                shown,
                "plain http:// is not allowed; use https://, allow this exact origin with "
                f"UrlPolicy.local('{origin}') for a local server, or set UrlPolicy(allow_http=True) "
                "(dangerous: traffic is unencrypted)",
            )
        if not self.allow_private:
            reason = _non_public_reason(host, address)
            if reason is not None:
                raise UrlPolicyError(shown, f"{reason}; " + _HOW_TO_ALLOW_PRIVATE.format(origin=origin))
        return parsed

    def allows(self, url: str | httpx2.URL) -> bool:
        """Whether `check(url)` would succeed."""
        try:
            self.check(url)
        except UrlPolicyError:
            return False
        return True


def url_origin(url: httpx2.URL) -> str:
    """`scheme://host:port` of an absolute URL (host lower-cased, default port filled in), for same-origin checks."""
    port = url.port if url.port is not None else _DEFAULT_PORTS.get(url.scheme, 80)
    return f"{url.scheme}://{url.raw_host.decode('ascii').lower().rstrip('.')}:{port}"


def _classify_host(
    raw_host: bytes, shown: str
) -> tuple[str, ipaddress.IPv4Address | ipaddress.IPv6Address | None]:
    """The lower-case host without its trailing dot, and the IP address it denotes, if it is a literal."""
    try:
        host = raw_host.decode("ascii").lower()
    except UnicodeDecodeError:
        raise UrlPolicyError(shown, "the host is not a valid host name") from None
    if not host:
        raise UrlPolicyError(shown, "the URL has no host")
    if ":" in host:
        if "%" in host:
            raise UrlPolicyError(
                shown, "IPv6 zone identifiers are not allowed (they only name link-local hosts)"
            )
        try:
            return host, ipaddress.IPv6Address(host)
        except ValueError:
            raise UrlPolicyError(shown, f"{host!r} is not a valid IPv6 address") from None
    if host.endswith("."):
        host = host[:-1]
    if not host or not _HOST_CHARS.fullmatch(host) or ".." in host or host.startswith("."):
        raise UrlPolicyError(shown, "the host is not a valid host name")
    labels = host.split(".")
    # Like a browser (WHATWG URL) and inet_aton, which the resolver uses, a host whose last label is a
    # number is an IPv4 address in any of its spellings (2130706433, 0177.1, 0x7f.0.0.1).
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        address = _parse_ipv4(labels)
        if address is None:
            raise UrlPolicyError(shown, f"{host!r} is not a valid IPv4 address or host name")
        return host, address
    return host, None


def _parse_ipv4(labels: list[str]) -> ipaddress.IPv4Address | None:
    """The address inet_aton() gives for these labels (decimal, octal and hex parts, short forms)."""
    if len(labels) > 4:
        return None
    numbers: list[int] = []
    for label in labels:
        if not label:
            return None
        try:
            if label.startswith("0x"):
                numbers.append(int(label[2:] or "0", 16))
            elif len(label) > 1 and label.startswith("0"):
                numbers.append(int(label[1:], 8))
            else:
                numbers.append(int(label, 10))
        except ValueError:
            return None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for index, n in enumerate(leading):
        value |= n << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _non_public_reason(
    host: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address | None
) -> str | None:
    """Why `host` is not a public host, or `None` when it may be one."""
    if address is None:
        for suffix in _LOCAL_SUFFIXES:
            if host == suffix or host.endswith("." + suffix):
                return f"{host!r} is a local network name (.{suffix})"
        if "." not in host:
            return f"{host!r} is a single-label name, which resolvers complete with local search domains"
        return None
    if isinstance(address, ipaddress.IPv4Address):
        reason = _ipv4_reason(address)
        return f"{address} is {reason}" if reason else None
    return _ipv6_reason(address)


def _ipv4_reason(address: ipaddress.IPv4Address) -> str | None:
    for network, reason in _BLOCKED_V4:
        if address in network:
            return reason
    return None


def _ipv6_reason(address: ipaddress.IPv6Address) -> str | None:
    if address == ipaddress.IPv6Address("::"):
        return f"{address} is the unspecified address"
    if address == ipaddress.IPv6Address("::1"):
        return f"{address} is a loopback address"
    embedded: ipaddress.IPv4Address | None = None
    if address in _MAPPED_V6 or address in _COMPAT_V6 or address in _NAT64_V6:
        embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    elif address in _SIX_TO_FOUR:
        embedded = ipaddress.IPv4Address((int(address) >> 80) & 0xFFFFFFFF)
    if embedded is not None:
        inner = _ipv4_reason(embedded)
        return f"{address} embeds {embedded}, which is {inner}" if inner else None
    for network, reason in _NON_GLOBAL_V6:
        if address in network:
            return f"{address} is {reason}"
    if address not in _GLOBAL_V6:
        return f"{address} is a reserved address"
    for network, reason in _BLOCKED_V6:
        if address in network:
            return f"{address} is {reason}"
    return None


def _format_origin(
    scheme: str, host: str, port: int, address: ipaddress.IPv4Address | ipaddress.IPv6Address | None
) -> str:
    if isinstance(address, ipaddress.IPv6Address):
        host = f"[{address.compressed}]"
    elif address is not None:
        host = str(address)
    return f"{scheme}://{host}:{port}"


def _normalize_origin(origin: str) -> str:
    """The canonical `scheme://host:port` form of an allowed origin; raises `ValueError` if it is not one."""
    import httpx2

    try:
        parsed = httpx2.URL(origin)
    except (httpx2.InvalidURL, TypeError, ValueError) as exc:
        raise ValueError(f"allowed origin {origin!r} is not a valid URL: {exc}") from None
    scheme = parsed.scheme
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"allowed origin {origin!r} must start with http:// or https://")
    if parsed.userinfo or parsed.query or parsed.fragment or parsed.raw_path not in (b"", b"/"):
        raise ValueError(
            f"allowed origin {origin!r} must be only scheme://host[:port], without credentials, path or query"
        )
    try:
        host, address = _classify_host(parsed.raw_host, origin)
    except UrlPolicyError as exc:
        raise ValueError(f"allowed origin {origin!r} is invalid: {exc.reason}") from None
    port = parsed.port if parsed.port is not None else _DEFAULT_PORTS[scheme]
    return _format_origin(scheme, host, port, address)
