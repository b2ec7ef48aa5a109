"""An OpenAI Chat Completions model that checks every body it sends against the uncached codec.

For the wire-cache tests (root and ferrule-openai's): a cached body must be byte-identical to the
one the codec encodes without a cache, for every call the model sends. Needs only `ferrule-openai`.
"""

from __future__ import annotations

from typing import Any
from typing import Unpack

from ferrule.core.codec import Codec
from ferrule.core.codec import WireRequest
from ferrule.core.model import ModelCall
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAIModelOptions

__all__ = ["CheckedChatModel"]


class CheckedChatModel(OpenAIChatModel):
    """Checks each body it sends against the uncached encoding of the same call, and keeps it."""

    def __init__(self, model_name: str, **options: Unpack[OpenAIModelOptions]) -> None:
        super().__init__(model_name, **options)
        self.sent: list[bytes] = []
        """Every body this model sent (buffered requests only), in order."""

    async def _send(self, call: ModelCall, codec: Codec, wire: WireRequest) -> Any:
        plain = self.codec()
        plain.wire_cache = None
        assert wire.body == plain.encode(call).body
        self.sent.append(wire.body)
        return await super()._send(call, codec, wire)
