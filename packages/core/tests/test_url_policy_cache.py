"""The allowed-URL cache behind `UrlPolicy.check`: same verdicts as uncached, rejections never cached."""

from __future__ import annotations

import httpx2
import pytest

from ferrule.core import url_policy
from ferrule.core.errors import UrlPolicyError
from ferrule.core.url_policy import UrlPolicy


def test_repeat_allowed_check_returns_an_equal_url() -> None:
    policy = UrlPolicy()
    first = policy.check("https://api.example.com/v1/chat")
    second = policy.check("https://api.example.com/v1/chat")
    assert first == second == httpx2.URL("https://api.example.com/v1/chat")


def test_rejections_raise_every_time() -> None:
    policy = UrlPolicy()
    for _ in range(3):
        with pytest.raises(UrlPolicyError, match="loopback"):
            policy.check("https://127.0.0.1/v1")


def test_verdict_depends_on_the_policy() -> None:
    url = "http://127.0.0.1:8080/v1"
    assert UrlPolicy.local("http://127.0.0.1:8080").allows(url)
    assert not UrlPolicy().allows(url)
    assert UrlPolicy(allow_http=True, allow_private=True).allows(url)
    assert not UrlPolicy(allow_http=True).allows(url)


def test_url_object_input_is_returned_itself() -> None:
    url = httpx2.URL("https://api.example.com/v1")
    assert UrlPolicy().check(url) is url
    assert UrlPolicy().check(url) is url


@pytest.mark.parametrize("extra", [0, 1])
def test_length_limit_of_the_cache(extra: int) -> None:
    prefix = "https://api.example.com/"
    allowed = prefix + "a" * (url_policy._MAX_CACHED_URL_CHARS - len(prefix) + extra)
    rejected = allowed.replace("api.example.com", "10.0.0.1")
    url_policy.UrlPolicy._check_cached.cache_clear()
    assert UrlPolicy().check(allowed) == httpx2.URL(allowed)
    with pytest.raises(UrlPolicyError, match="private"):
        UrlPolicy().check(rejected)
    assert url_policy.UrlPolicy._check_cached.cache_info().currsize == (1 - extra)
