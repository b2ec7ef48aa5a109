"""The AI SDK (Vercel) for ferrule: UI message stream v1 SSE records, and the chat request parsed back.

`encode(event)` returns SSE records (`chunks(event)` the chunk objects); `HEADERS` are the
response headers and `DONE` the terminal record. `parse_request` and `approvals_from` read a post.
`app(agent)` is an ASGI app (needs the `ferrule-ui[server]` extra; imported only when called).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import server_app
from ._encode import DONE
from ._encode import HEADERS
from ._encode import ChatRequest
from ._encode import UIMessage
from ._encode import UIMessagePart
from ._encode import approvals_from
from ._encode import browser_messages
from ._encode import chunks
from ._encode import encode
from ._encode import parse_request

__all__ = [
    "DONE",
    "HEADERS",
    "ChatRequest",
    "UIMessage",
    "UIMessagePart",
    "app",
    "approvals_from",
    "browser_messages",
    "chunks",
    "encode",
    "parse_request",
]

if TYPE_CHECKING:
    from ._app import app
else:
    app = server_app("ferrule.ui.vercel", "the AI SDK chat")
