"""The AI SDK (Vercel) for ferrule: UI message stream v1 SSE records, and the chat request parsed back.

`encode(event)` returns SSE records (`chunks(event)` the chunk objects); `HEADERS` are the
response headers and `DONE` the terminal record. `parse_request` and `approvals_from` read a post.
`app(agent)` is an ASGI app (needs the `ferrule-ui[server]` extra; imported only when called).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ferrule.core.install import install_hint

from ._encode import (
    DONE,
    HEADERS,
    ChatRequest,
    UIMessage,
    UIMessagePart,
    approvals_from,
    browser_messages,
    chunks,
    encode,
    parse_request,
)

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

    def app(agent: Any, **options: Any) -> Any:
        """An ASGI app serving `agent` to the AI SDK chat; the options are those of `_app.app`.

        Raises `ImportError` naming the extra to install when Starlette is missing.
        """
        try:
            from ._app import app as build
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ImportError(
                "ferrule.ui.vercel.app needs Starlette: " + install_hint("ferrule-ui[server]")
            ) from exc
        return build(agent, **options)
