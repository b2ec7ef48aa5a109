"""UrlPolicy: every rejected class of URL, the explicit allowances, and credential-free messages."""

from __future__ import annotations

import httpx2
import msgspec
import pytest

from ferrule.core.errors import UrlPolicyError
from ferrule.core.errors import UserError
from ferrule.core.url_policy import UrlPolicy
from ferrule.core.url_policy import redact_url

DEFAULT = UrlPolicy()

ALLOWED = [
    "https://api.openai.com/v1",
    "https://API.OpenAI.com:443/v1/chat/completions?x=1",
    "https://generativelanguage.googleapis.com./v1beta",  # trailing dot of a public name
    "https://8.8.8.8/",
    "https://[2606:4700:4700::1111]/",
    "https://[::ffff:8.8.8.8]/",  # IPv4-mapped public address
    "https://[64:ff9b::808:808]/",  # NAT64 of a public address
    "https://[2002:808:808::1]/",  # 6to4 of a public address
    "https://bücher.de/",
    "https://example.com:8443/x",
]


@pytest.mark.parametrize("url", ALLOWED)
def test_public_https_urls_are_allowed(url: str) -> None:
    parsed = DEFAULT.check(url)
    assert isinstance(parsed, httpx2.URL)
    assert parsed.scheme == "https"
    assert DEFAULT.allows(url)


REJECTED = [
    # (url, words the reason must contain)
    ("ftp://example.com/", "scheme 'ftp'"),
    ("file:///etc/passwd", "scheme 'file'"),
    ("javascript:alert(1)", "scheme 'javascript'"),
    ("api.openai.com/v1", "relative URL"),
    ("http://api.openai.com/v1", "plain http://"),
    ("https://user:pass@api.openai.com/", "credentials"),
    ("https://user@api.openai.com/", "credentials"),
    ("https:///path", "no host"),
    ("https://a..b/", "not a valid host"),
    ("https://%31%32%37.0.0.1/", "not a valid host"),
    ("https://1.2.3.4.5/", "not a valid IPv4"),
    ("https://example.com:99999/", "port 99999"),
    ("https://[fe80::1%25eth0]/", "zone"),
    # private, loopback, link-local, shared, unspecified, multicast, reserved, documentation (IPv4)
    ("https://10.1.2.3/", "private"),
    ("https://172.16.0.1/", "private"),
    ("https://172.31.255.255/", "private"),
    ("https://192.168.1.1/", "private"),
    ("https://127.0.0.1/", "loopback"),
    ("https://127.255.255.254/", "loopback"),
    ("https://169.254.169.254/latest/meta-data", "link-local"),
    ("https://100.64.0.1/", "shared"),
    ("https://0.0.0.0/", "unspecified"),
    ("https://224.0.0.1/", "multicast"),
    ("https://239.255.255.250/", "multicast"),
    ("https://240.0.0.1/", "reserved"),
    ("https://255.255.255.255/", "reserved"),
    ("https://192.0.0.8/", "reserved"),
    ("https://198.18.0.1/", "benchmarking"),
    ("https://192.0.2.10/", "documentation"),
    ("https://198.51.100.7/", "documentation"),
    ("https://203.0.113.9/", "documentation"),
    # odd IPv4 spellings are the address they denote
    ("https://2130706433/", "127.0.0.1 is a loopback"),
    ("https://0x7f000001/", "127.0.0.1 is a loopback"),
    ("https://0x7f.0.0.1/", "127.0.0.1 is a loopback"),
    ("https://0x7f.1/", "127.0.0.1 is a loopback"),
    ("https://127.1/", "127.0.0.1 is a loopback"),
    ("https://017700000001/", "127.0.0.1 is a loopback"),
    ("https://10.0x10.1/", "10.16.0.1 is a private"),
    ("https://0/", "0.0.0.0 is an unspecified"),
    ("https://169.254.43518/", "169.254.169.254 is a link-local"),
    ("https://0177.0.0.1/", "not a valid"),  # httpx2 refuses this octal spelling outright
    # IPv6 and IPv4 embedded in IPv6
    ("https://[::1]/", "loopback"),
    ("https://[::]/", "unspecified"),
    ("https://[fe80::1]/", "link-local"),
    ("https://[fd12:3456::1]/", "unique local"),
    ("https://[fec0::1]/", "site-local"),
    ("https://[ff02::1]/", "multicast"),
    ("https://[2001:db8::1]/", "documentation"),
    ("https://[3fff::1]/", "documentation"),
    ("https://[100::1]/", "discard"),
    ("https://[2001::1]/", "Teredo"),
    ("https://[4000::1]/", "reserved"),
    ("https://[::ffff:127.0.0.1]/", "embeds 127.0.0.1"),
    ("https://[::ffff:a9fe:a9fe]/", "embeds 169.254.169.254"),
    ("https://[::127.0.0.1]/", "embeds 127.0.0.1"),  # IPv4-compatible
    ("https://[64:ff9b::10.0.0.1]/", "embeds 10.0.0.1"),  # NAT64
    ("https://[64:ff9b:1::1]/", "NAT64"),
    ("https://[2002:c0a8:101::1]/", "embeds 192.168.1.1"),  # 6to4
    # local names, with and without trailing dots and case
    ("https://localhost/", "local network name"),
    ("https://LOCALHOST./", "local network name"),
    ("https://api.localhost/", "local network name"),
    ("https://printer.local/", "local network name"),
    ("https://metadata.google.internal/", "local network name"),
    ("https://router.home.arpa/", "local network name"),
    ("https://router.home.arpa./", "local network name"),
    ("https://metadata/", "single-label"),
]


@pytest.mark.parametrize(("url", "why"), REJECTED)
def test_rejected_urls(url: str, why: str) -> None:
    with pytest.raises(UrlPolicyError) as info:
        DEFAULT.check(url)
    assert why in info.value.reason
    assert isinstance(info.value, UserError)
    assert not DEFAULT.allows(url)


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1/", "https://localhost/", "https://[::1]/", "https://10.0.0.1/"]
)
def test_private_rejections_say_how_to_allow(url: str) -> None:
    with pytest.raises(UrlPolicyError) as info:
        DEFAULT.check(url)
    assert "UrlPolicy.local(" in str(info.value)
    assert "allow_private=True" in str(info.value)


def test_http_rejection_says_how_to_allow() -> None:
    with pytest.raises(UrlPolicyError) as info:
        DEFAULT.check("http://example.com/")
    assert "UrlPolicy.local('http://example.com:80')" in str(info.value)
    assert "allow_http=True" in str(info.value)


def test_message_never_shows_credentials() -> None:
    with pytest.raises(UrlPolicyError) as info:
        DEFAULT.check("https://alice:hunter2-password@api.example.com/v1?api_key=sk-live-123&x=1")
    text = str(info.value) + info.value.url
    assert "hunter2" not in text
    assert "alice" not in text
    assert "sk-live-123" not in text
    assert "x=1" in info.value.url


def test_credentials_rejected_even_when_everything_is_relaxed() -> None:
    relaxed = UrlPolicy(
        allow_http=True, allow_private=True, allowed_origins=frozenset({"http://127.0.0.1:80"})
    )
    with pytest.raises(UrlPolicyError, match="credentials"):
        relaxed.check("http://u:p@127.0.0.1/")


def test_local_origin_allows_exactly_that_origin() -> None:
    policy = UrlPolicy.local("http://127.0.0.1:8080")
    assert str(policy.check("http://127.0.0.1:8080/v1/chat")) == "http://127.0.0.1:8080/v1/chat"
    # The same address in another spelling is the same origin.
    assert policy.allows("http://2130706433:8080/")
    assert policy.allows("http://127.1:8080/")
    for other in (
        "http://127.0.0.1:8081/",  # other port
        "https://127.0.0.1:8080/",  # other scheme
        "http://127.0.0.2:8080/",  # other host
        "http://localhost:8080/",  # other host name, even if it resolves to the same address
        "http://127.0.0.1/",  # default port 80
    ):
        assert not policy.allows(other), other
    # Public https still works; the allowance only adds.
    assert policy.allows("https://api.openai.com/")


def test_allowed_origin_default_port_and_case_are_normalized() -> None:
    policy = UrlPolicy(allowed_origins=frozenset({"HTTP://LocalHost", "http://[::1]:11434/"}))
    assert policy.allowed_origins == frozenset({"http://localhost:80", "http://[::1]:11434"})
    assert policy.allows("http://localhost/x")
    assert policy.allows("http://localhost:80/x")
    assert policy.allows("http://localhost./x")
    assert policy.allows("http://[0:0::1]:11434/api")


@pytest.mark.parametrize(
    "origin",
    [
        "127.0.0.1:8080",
        "ftp://x.com",
        "http://127.0.0.1:8080/v1",
        "http://u:p@127.0.0.1",
        "http://x.com?q=1",
        "http://",
    ],
)
def test_invalid_allowed_origins_fail_at_construction(origin: str) -> None:
    with pytest.raises(ValueError, match="allowed origin"):
        UrlPolicy.local(origin)


def test_allow_http_relaxes_only_the_scheme() -> None:
    policy = UrlPolicy(allow_http=True)
    assert policy.allows("http://example.com/")
    assert not policy.allows("http://127.0.0.1/")
    assert not policy.allows("ftp://example.com/")


def test_allow_private_relaxes_only_the_network() -> None:
    policy = UrlPolicy(allow_private=True)
    assert policy.allows("https://127.0.0.1/")
    assert policy.allows("https://localhost:8443/")
    assert policy.allows("https://[::1]/")
    assert not policy.allows("http://127.0.0.1/")


def test_check_accepts_a_parsed_url() -> None:
    url = httpx2.URL("https://api.openai.com/v1")
    assert DEFAULT.check(url) is url
    with pytest.raises(UrlPolicyError):
        DEFAULT.check(httpx2.URL("http://api.openai.com/v1"))


def test_policy_is_frozen_hashable_and_serializable() -> None:
    policy = UrlPolicy.local("http://127.0.0.1:8080")
    with pytest.raises(AttributeError):
        policy.allow_http = True  # type: ignore[misc]
    assert hash(policy) == hash(UrlPolicy.local("http://127.0.0.1:8080/"))
    decoded = msgspec.json.decode(msgspec.json.encode(policy), type=UrlPolicy)
    assert decoded == policy


def test_redact_url() -> None:
    assert redact_url("https://u:p@x.com/a?key=K&token=T&model=m") == (
        "https://x.com/a?key=%3Credacted%3E&token=%3Credacted%3E&model=m"
    )
    assert redact_url("https://x.com/a") == "https://x.com/a"
    assert "secret" not in redact_url("ht tp://u:secret@[bad/?k=secret")
