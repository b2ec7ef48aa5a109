"""Browser UI protocols for ferrule agents.

```python
from ferrule.ui import UIBridge
from ferrule.ui import vercel          # AI SDK UI message stream v1 (SSE)
from ferrule.ui import ag_ui           # AG-UI events

bridge = UIBridge(thread_id, run_id)
async with agent.run_stream(prompt) as stream:
    async for event in bridge.stream(stream):
        send(vercel.encode(event))      # or ag_ui.encode_sse(event)
```

`UIBridge` turns an agent's stream into protocol-neutral `UIEvent`s with validated identities;
`decisions_from` turns a browser's approval answers into `agent.resume` decisions;
`sanitize_messages` makes browser history safe; `ReplayBuffer` keeps records for reconnects;
`custom_value` sends typed application values. `ferrule.ui.vercel.app(agent)` and
`ferrule.ui.ag_ui.app(agent)` are ready ASGI apps (the `ferrule-ui[server]` extra).
"""

from __future__ import annotations

from ._bridge import (
    APPROVAL_PREFIX,
    ApprovalResponse,
    UIBridge,
    approval_id_for,
    decisions_from,
    error_message,
)
from ._custom import CustomValueTooLargeError, custom_value
from ._errors import (
    ApprovalConflictError,
    ClientInputError,
    InvalidIdentifierError,
    ReplayGapError,
    StoreFullError,
    UIError,
)
from ._events import (
    ApprovalRequested,
    ApprovalResolved,
    CustomValue,
    FinalResult,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolFailed,
    ToolResult,
    UIEvent,
)
from ._ids import check_id
from ._limits import DEFAULT_LIMITS, OnDisconnect, UILimits
from ._replay import ReplayBuffer
from ._sanitize import BrowserMessage, sanitize_messages
from ._store import InMemoryPausedRunStore, PausedRunStore

__version__ = "0.1.0"

__all__ = [
    "APPROVAL_PREFIX",
    "DEFAULT_LIMITS",
    "ApprovalConflictError",
    "ApprovalRequested",
    "ApprovalResolved",
    "ApprovalResponse",
    "BrowserMessage",
    "ClientInputError",
    "CustomValue",
    "CustomValueTooLargeError",
    "FinalResult",
    "InMemoryPausedRunStore",
    "InvalidIdentifierError",
    "OnDisconnect",
    "PausedRunStore",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningStart",
    "ReplayBuffer",
    "ReplayGapError",
    "RunError",
    "RunFinished",
    "RunStarted",
    "StoreFullError",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ToolCallArgs",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolFailed",
    "ToolResult",
    "UIBridge",
    "UIError",
    "UIEvent",
    "UILimits",
    "approval_id_for",
    "check_id",
    "custom_value",
    "decisions_from",
    "error_message",
    "sanitize_messages",
    "__version__",
]
