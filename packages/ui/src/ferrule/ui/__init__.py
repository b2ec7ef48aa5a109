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

from ._bridge import APPROVAL_PREFIX
from ._bridge import ApprovalResponse
from ._bridge import UIBridge
from ._bridge import approval_id_for
from ._bridge import decisions_from
from ._bridge import error_message
from ._custom import CustomValueTooLargeError
from ._custom import custom_value
from ._errors import ApprovalConflictError
from ._errors import ClientInputError
from ._errors import InvalidIdentifierError
from ._errors import ReplayGapError
from ._errors import StoreFullError
from ._errors import UIError
from ._events import ApprovalRequested
from ._events import ApprovalResolved
from ._events import CustomValue
from ._events import FinalResult
from ._events import ReasoningDelta
from ._events import ReasoningEnd
from ._events import ReasoningStart
from ._events import RunError
from ._events import RunFinished
from ._events import RunStarted
from ._events import TextDelta
from ._events import TextEnd
from ._events import TextStart
from ._events import ToolCallArgs
from ._events import ToolCallEnd
from ._events import ToolCallStart
from ._events import ToolFailed
from ._events import ToolResult
from ._events import UIEvent
from ._ids import check_id
from ._limits import DEFAULT_LIMITS
from ._limits import OnDisconnect
from ._limits import UILimits
from ._replay import ReplayBuffer
from ._sanitize import BrowserMessage
from ._sanitize import sanitize_messages
from ._store import InMemoryPausedRunStore
from ._store import PausedRunStore

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
