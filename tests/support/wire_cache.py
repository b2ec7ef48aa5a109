"""A `WireCache` that marks what it hands back, for the codecs' wire-cache tests.

A cached body must be byte-identical to the uncached one, so a test cannot tell from the bytes
alone which path a request took; `Marking` makes the reused turns visible.
"""

from __future__ import annotations

from typing import Any

from ferrule.core.codec import WireCache

__all__ = ["Marking"]


class Marking(WireCache):
    """A cache whose reused turns say so: `step` reads `STEP` in every turn taken from it."""

    __slots__ = ()

    def encode(self, messages: Any, view: Any, encode: Any, /) -> bytes:
        return super().encode(messages, view, encode).replace(b"step", b"STEP")
