"""`FooProvider`: the connection to the Foo API (its root, credential and error bodies)."""

from __future__ import annotations

import os
from typing import Final
from typing import Unpack

from ferrule.core.errors import MissingCredentialError
from ferrule.core.provider import Provider
from ferrule.core.provider import ProviderOptions

from .codec import PROVIDER_NAME

__all__ = ["API_KEY_ENV", "FooProvider"]

API_KEY_ENV: Final = "FOO_API_KEY"
"""The environment variable the key is read from when none is passed."""


class FooProvider(Provider):
    """The Foo API: bearer key from `api_key` or `FOO_API_KEY`, root `https://api.foo.example/v1`.

    Everything transport-level (the URL policy, timeouts, size limits, error mapping, keeping the
    key out of every message) is `ferrule.core.provider.Provider`'s; a provider only says where and how
    to authenticate. `options` are the connection options every provider takes.
    """

    name = PROVIDER_NAME

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = "https://api.foo.example/v1",
        **options: Unpack[ProviderOptions],
    ) -> None:
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        if not key:
            raise MissingCredentialError(
                f"no Foo API key: set {API_KEY_ENV} or pass FooProvider(api_key=...)", env_vars=(API_KEY_ENV,)
            )
        # The default `_auth_headers` sends `Authorization: Bearer <key>`; override it for another scheme.
        super().__init__(base_url=base_url, api_key=key, **options)
