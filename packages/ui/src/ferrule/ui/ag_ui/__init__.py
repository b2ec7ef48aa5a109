"""AG-UI for ferrule: official AG-UI events from UI events, and AG-UI's run input parsed back.

`encode(event)` returns AG-UI event objects; `encode_sse` / `encode_jsonl` write them for HTTP
and for newline streams. `parse_run_input` and `parse_approval` read what a client posts.
`app(agent)` is an ASGI app (needs the `ferrule-ui[server]` extra; imported only when called).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import server_app
from ._encode import APPROVAL_REASON
from ._encode import CONTENT_TYPE
from ._encode import ContentPart
from ._encode import InputMessage
from ._encode import ResumeEntry
from ._encode import RunAgentInput
from ._encode import browser_messages
from ._encode import encode
from ._encode import encode_jsonl
from ._encode import encode_sse
from ._encode import parse_approval
from ._encode import parse_run_input

__all__ = [
    "APPROVAL_REASON",
    "CONTENT_TYPE",
    "ContentPart",
    "InputMessage",
    "ResumeEntry",
    "RunAgentInput",
    "app",
    "browser_messages",
    "encode",
    "encode_jsonl",
    "encode_sse",
    "parse_approval",
    "parse_run_input",
]

if TYPE_CHECKING:
    from ._app import app
else:
    app = server_app("ferrule.ui.ag_ui", "AG-UI clients")
