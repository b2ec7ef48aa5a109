"""Lifecycle hooks: one ordered, synchronous stream of events about a run.

```python
from ferrule.agent import Agent
from ferrule.agent.hooks import HookEvent

def audit(event: HookEvent) -> None:
    if event.kind == "tool_execute_start":
        print("calling", event.tool_call.tool_name)

agent = Agent(model, hooks=[audit])
```

Every hook receives every event, in order: the agent's hooks first, then the hooks of active
capabilities in capability order. Events come in start/end pairs with an error event where the
step can fail:

| events | around |
|---|---|
| `run_start`, `run_end`, `run_error` | the invocation (`run_error` also when a hook failed) |
| `model_request_start`, `model_request_end`, `model_request_error` | one model request (after history processors and the context budget) |
| `tool_dispatch_start`, `tool_dispatch_end`, `tool_dispatch_error` | the handling of one response's function calls |
| `tool_execute_start`, `tool_execute_end`, `tool_execute_error` | one tool call's execution |
| `output_validation_start`, `output_validation_end`, `output_validation_error` | the checks of one output candidate |
| `stream_event_start`, `stream_event_end`, `stream_event_error` | delivery of one stream event to the consumer |

Hooks are synchronous and run inline: keep them fast. Payloads are borrowed from the run: read
them, copy what you keep, never mutate them. A hook that raises stops the run with that exception
(unchanged); `run_error` is then delivered to every hook (exceptions raised while delivering
`run_error` are ignored, so they cannot mask the original failure).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import Literal
from typing import TypeAlias

import msgspec

from ferrule.core.errors import UserError
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import ModelCall
from ferrule.core.usage import RunUsage

from ._util import is_async
from .correlation import RunCorrelation

__all__ = ["Hook", "HookEvent", "HookEventKind"]

HookEventKind: TypeAlias = Literal[
    "run_start",
    "run_end",
    "run_error",
    "model_request_start",
    "model_request_end",
    "model_request_error",
    "tool_dispatch_start",
    "tool_dispatch_end",
    "tool_dispatch_error",
    "tool_execute_start",
    "tool_execute_end",
    "tool_execute_error",
    "output_validation_start",
    "output_validation_end",
    "output_validation_error",
    "stream_event_start",
    "stream_event_end",
    "stream_event_error",
]
"""The kinds of lifecycle events, in start/end/error families."""


class HookEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One lifecycle event; fields that do not apply to its `kind` are `None`."""

    kind: HookEventKind
    """What happened."""
    run_id: str
    """The run's identifier."""
    agent_name: str
    """The agent's name."""
    run_step: int
    """Model requests made so far in this run."""
    model: str | None = None
    """`provider:model` of the model involved (model requests, run start)."""
    call: ModelCall | None = None
    """The provider-facing call (`model_request_start`)."""
    response: ModelResponse | None = None
    """The model's response (`model_request_end`)."""
    tool_calls: list[ToolCallPart] | None = None
    """The calls being dispatched (`tool_dispatch_*`)."""
    tool_call: ToolCallPart | None = None
    """The call being executed (`tool_execute_*`)."""
    args: Any = None
    """The validated arguments of the call being executed."""
    result: ToolReturnPart | RetryPromptPart | None = None
    """The result entering history (`tool_execute_end`)."""
    output: Any = None
    """The output candidate (`output_validation_start`) or accepted output (`*_end`, `run_end`)."""
    event: Any = None
    """The stream event being delivered (`stream_event_*`)."""
    error: BaseException | None = None
    """The failure (`*_error`); for a rejected output, the `ModelRetry` sent back."""
    usage: RunUsage | None = None
    """The run's usage so far (`run_end`, `run_error`)."""
    correlation: RunCorrelation | None = None
    """The orchestration the run belongs to (`run_start`), when the run was given `correlation=`."""


Hook: TypeAlias = Callable[[HookEvent], None]
"""A synchronous observer of every `HookEvent` of a run."""


def check_hooks(hooks: Sequence[Hook]) -> list[Hook]:
    """The hooks as a list, refusing coroutine functions (hooks run inline and synchronously)."""
    checked: list[Hook] = []
    for hook in hooks:
        if not callable(hook):
            raise UserError(f"hooks must be callables taking a HookEvent, got {hook!r}")
        if is_async(hook):
            raise UserError(
                f"hook {hook!r} is async; lifecycle hooks are synchronous (hand slow work to a queue or a task)"
            )
        checked.append(hook)
    return checked


class HookDispatcher:
    """Delivers events of one run to its hooks, in order."""

    __slots__ = ("agent_name", "hooks", "run_id")

    def __init__(self, hooks: list[Hook], run_id: str, agent_name: str) -> None:
        self.hooks = hooks
        self.run_id = run_id
        self.agent_name = agent_name

    def fire(self, kind: HookEventKind, run_step: int, **fields: Any) -> None:
        """Deliver one event to every hook; a hook's exception propagates."""
        event = HookEvent(
            kind=kind, run_id=self.run_id, agent_name=self.agent_name, run_step=run_step, **fields
        )
        for hook in self.hooks:
            hook(event)

    def fire_quietly(self, kind: HookEventKind, run_step: int, error: BaseException, **fields: Any) -> None:
        """Deliver a terminal event; failures are noted on `error` instead of replacing it."""
        event = HookEvent(
            kind=kind,
            run_id=self.run_id,
            agent_name=self.agent_name,
            run_step=run_step,
            error=error,
            **fields,
        )
        for hook in self.hooks:
            try:
                hook(event)
            except Exception as exc:
                error.add_note(f"ferrule: hook {hook!r} also failed while handling {kind}: {exc!r}")
