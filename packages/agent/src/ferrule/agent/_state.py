"""`LoopState`: what one agent invocation knows, read and written by every stage of the loop.

The stages (`_request`, `_output_step`, `_scheduler`, `_tool_call`, `_pause`) are functions of a
`LoopState` and their explicit inputs; the step loop (`_run.Run`, a `LoopState` with the control of
one invocation) calls them in order. Nothing here runs a step.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import overload

import msgspec

from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import Model
from ferrule.core.retry import RetryBudget
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import RunUsage
from ferrule.core.usage import UsageLimits

from ._context import RunContext
from ._core import AgentCore
from ._deferred import Decision
from ._deferred import Paused
from ._deferred import PausedState
from ._errors import RunState
from ._errors import attach_state
from ._output_plan import OutputPlan
from ._queue import PendingMessageQueue
from ._receipts import run_actions
from ._step_tools import StepTools
from ._tools import Tool
from ._url_check import UrlCheck
from ._util import Callback
from .correlation import RunCorrelation
from .hooks import HookDispatcher
from .policies import PolicyStages

if TYPE_CHECKING:
    from .durable import DurableRun
    from .pricing import Pricing
    from .pricing import RunCost

__all__ = ["DONE", "HANDLE", "PAUSED", "REQUEST", "Emit", "HistoryView", "LoopState", "copy_usage"]

REQUEST = 0
"""Phase: the next step is a model request."""
HANDLE = 1
"""Phase: the next step handles the last response (its tool calls or its output)."""
DONE = 2
"""Phase: the run finished with output."""
PAUSED = 3
"""Phase: the run paused for decisions on deferred calls."""

Emit = Callable[[Any], Awaitable[None]]
"""Where a run's events go when someone listens (the stream, or an event handler)."""


class HistoryView(Sequence[Message]):
    """A read-only view of the first `n` messages of the run's append-only history (no copy)."""

    __slots__ = ("_items", "_len")

    def __init__(self, items: list[Message], length: int) -> None:
        self._items = items
        self._len = length

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self._items[: self._len][index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("history index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Message]:
        return itertools.islice(self._items, self._len)

    def __repr__(self) -> str:
        return f"HistoryView({self._len} messages)"


def copy_usage(usage: RunUsage) -> RunUsage:
    """An independent copy of a run's usage (what a pause saves and a resume starts from)."""
    return msgspec.structs.replace(usage, details=dict(usage.details))


class LoopState:
    """The state of one agent invocation: history, usage, counters and what this step offers."""

    # Slots keep attribute access fast: a plain instance dict stops sharing keys past 30 attributes.
    __slots__ = (
        "core",
        "correlation",
        "cost",
        "ctx",
        "deadline",
        "decisions",
        "durable",
        "history_processors",
        "hooks",
        "instructions",
        "messages",
        "model",
        "new_message_index",
        "output",
        "output_retries",
        "output_tool_name",
        "output_validators",
        "paused",
        "pending_state",
        "phase",
        "plan",
        "policies",
        "pricing",
        "queue",
        "response",
        "resume_queued",
        "retry_budget",
        "run_id",
        "run_span",
        "settings",
        "settings_layers",
        "step_tools",
        "tool_retries",
        "trace_parent",
        "unknown_outcomes",
        "url_check",
        "usage",
        "usage_limits",
    )

    def __init__(
        self,
        core: AgentCore,
        *,
        model: Model,
        plan: OutputPlan,
        deps: Any,
        messages: list[Message],
        new_message_index: int,
        instructions: str | None,
        settings: ModelSettings,
        usage_limits: UsageLimits,
        deadline: float | None,
        usage: RunUsage,
        prompt: Any,
        run_id: str,
        durable: DurableRun | None,
        tool_retries: dict[str, int] | None = None,
        output_retries: int = 0,
    ) -> None:
        self.core = core
        self.model = model
        self.plan = plan
        self.messages = messages
        self.new_message_index = new_message_index
        self.instructions = instructions
        self.settings = settings
        self.usage_limits = usage_limits
        self.deadline = deadline
        self.usage = usage
        self.run_id = run_id
        self.tool_retries: dict[str, int] = tool_retries if tool_retries is not None else {}
        self.output_retries = output_retries
        self.ctx: RunContext[Any] = RunContext(
            deps=deps,
            model=model,
            usage=usage,
            messages=messages,
            prompt=prompt,
            retries=self.tool_retries,
            run_id=run_id,
            deadline=deadline,
            output_retries=output_retries,
        )
        self.retry_budget = RetryBudget()
        self.unknown_outcomes: list[ToolCallPart] = []
        self.phase = REQUEST
        self.response: ModelResponse | None = None
        self.decisions: dict[str, Decision] | None = None
        """The decisions of a resumed run, until its paused response's calls are handled."""
        self.pending_state: PausedState | None = None
        self.resume_queued: list[ModelRequest] | None = None
        """Messages queued at the pause, appended after the paused response's results."""
        self.output: Any = None
        self.output_tool_name: str | None = None
        self.paused: Paused | None = None
        self.step_tools: StepTools = core.step_tools
        self.run_span: Any = None
        self.trace_parent: Any = None
        self.correlation: RunCorrelation | None = None
        # Extension points; all stay at these cheap defaults unless the agent or run uses them.
        self.hooks: HookDispatcher | None = None
        self.policies: PolicyStages | None = None
        """The run's tool policies by stage (`None`: the run has none)."""
        self.queue: PendingMessageQueue | None = None
        """Messages waiting to enter the run (`run(pending_messages=...)`)."""
        self.output_validators: list[Callback] = core.output_validators
        self.history_processors: list[Callback] = core.history_processors
        self.settings_layers: tuple[ModelSettings | None, ModelSettings | None] = (None, None)
        self.pricing: Pricing | None = None
        self.cost: RunCost | None = None
        self.url_check = UrlCheck(core.url_policy)
        self.durable = durable
        """The engine this run's steps go through (`ferrule.agent.durable.bind`); `None`: not durable."""
        if core.pricing is not None:
            self.enable_pricing(core.pricing)

    @property
    def resuming(self) -> bool:
        """Whether the run continues at a paused response (its calls are handled next)."""
        return self.phase == HANDLE and self.pending_state is not None

    @property
    def done(self) -> bool:
        """Whether the run finished (with output) or paused."""
        return self.phase >= DONE

    def enable_pricing(self, pricing: Pricing) -> None:
        """Price this run's requests (when the agent does not, but the run has a cost limit)."""
        from .pricing import RunCost

        self.pricing = pricing
        self.cost = RunCost(self.usage.cost_nano_usd if self.usage.requests else 0)

    def state(self) -> RunState:
        """The run's state, for errors."""
        return RunState(
            messages=self.messages,
            new_message_index=self.new_message_index,
            usage=self.usage,
            tool_retries=dict(self.tool_retries),
            output_retries=self.output_retries,
            unknown_outcomes=self.unknown_outcomes,
            actions=run_actions(
                self.messages, self.new_message_index, self.step_tools.by_name, self.core.tools
            ),
        )

    def call_context(self, tool: Tool[Any], tool_call_id: str) -> RunContext[Any]:
        """The context of one call of `tool`: its retries so far and its retry budget."""
        name = tool.name
        return self.ctx.for_call(
            name, tool_call_id, self.tool_retries.get(name, 0), self.core.max_retries_for(tool)
        )

    def output_context(self, tool_name: str | None, tool_call_id: str | None) -> RunContext[Any]:
        """The context of an output function or validator: output retries so far and their budget."""
        return self.ctx.for_call(
            tool_name or "", tool_call_id or "", self.output_retries, self.core.output_retries
        )

    def fail(self, exc: BaseException) -> None:
        """End the run with `exc`: attach its state, close the queue, notify hooks and telemetry."""
        if isinstance(exc, Exception):
            attach_state(exc, self.state())
        self.terminal(exc)
        if self.run_span is not None:
            self.run_span.fail(exc)
            self.run_span = None

    def terminal(self, exc: BaseException) -> None:
        """A terminal failure: queued messages that did not enter the history are refused from now on."""
        if self.queue is not None:
            self.queue.close()
        hooks = self.hooks
        if hooks is not None and isinstance(exc, Exception):
            hooks.fire_quietly("run_error", self.usage.requests, exc, usage=self.usage)
