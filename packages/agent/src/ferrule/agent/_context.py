"""The run context handed to tools, instructions, output functions and validators."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from typing import Generic
from typing import cast

from typing_extensions import TypeVar

from ferrule.core.messages import Message
from ferrule.core.model import Model
from ferrule.core.usage import RunUsage

from ._protocols import ActiveCapabilities

__all__ = ["DepsT", "RunContext", "partial_output_context"]

DepsT = TypeVar("DepsT", default=None, contravariant=True)
"""The type of a run's dependencies."""


class RunContext(Generic[DepsT]):
    """What a tool, instruction function, output function or validator knows about its run.

    One context exists per run; tools receive a copy that names their call. Treat every field as
    read-only: `messages` is the run's canonical history and must not be changed.
    """

    __slots__ = (
        "capabilities",
        "deadline",
        "deps",
        "max_retries",
        "messages",
        "model",
        "output_retries",
        "partial_output",
        "prompt",
        "retries",
        "retry",
        "run_id",
        "run_step",
        "tool_call_id",
        "tool_name",
        "usage",
    )

    def __init__(
        self,
        *,
        deps: DepsT,
        model: Model,
        usage: RunUsage,
        messages: Sequence[Message],
        prompt: Any = None,
        retries: dict[str, int] | None = None,
        run_id: str = "",
        deadline: float | None = None,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
        retry: int = 0,
        max_retries: int = 0,
        run_step: int = 0,
        output_retries: int = 0,
        partial_output: bool = False,
        capabilities: ActiveCapabilities | None = None,
    ) -> None:
        self.deps = deps
        """The dependencies passed to `run(deps=...)`."""
        self.model = model
        """The model the run uses."""
        self.usage = usage
        """The run's usage so far (updated in place as the run proceeds)."""
        self.messages = messages
        """The run's history so far; read-only."""
        self.prompt = prompt
        """The user prompt of this run, if any."""
        self.retries = retries if retries is not None else {}
        """Retries used so far, per tool name."""
        self.run_id = run_id
        """The run's identifier."""
        self.deadline = deadline
        """The run's absolute deadline on anyio's clock (`anyio.current_time()`), or `None`."""
        self.tool_name = tool_name
        """The tool being called (or the output tool being validated), if any."""
        self.tool_call_id = tool_call_id
        """The ID of the call being executed, if any."""
        self.retry = retry
        """How many times the current tool (or output) was retried already."""
        self.max_retries = max_retries
        """The retry budget of the current tool (or output)."""
        self.run_step = run_step
        """The number of model requests made so far in this run."""
        self.output_retries = output_retries
        """Output retries used so far."""
        self.partial_output = partial_output
        """`True` when an output validator is checking a partial, streamed snapshot."""
        self.capabilities = capabilities
        """The active capabilities, when the agent uses capabilities (else `None`)."""

    def for_call(self, tool_name: str, tool_call_id: str, retry: int, max_retries: int) -> RunContext[DepsT]:
        """A copy of this context naming one tool call."""
        clone = cast("RunContext[DepsT]", object.__new__(RunContext))
        clone.deps = self.deps
        clone.model = self.model
        clone.usage = self.usage
        clone.messages = self.messages
        clone.prompt = self.prompt
        clone.retries = self.retries
        clone.run_id = self.run_id
        clone.deadline = self.deadline
        clone.tool_name = tool_name
        clone.tool_call_id = tool_call_id
        clone.retry = retry
        clone.max_retries = max_retries
        clone.run_step = self.run_step
        clone.output_retries = self.output_retries
        clone.partial_output = False
        clone.capabilities = self.capabilities
        return clone

    def __repr__(self) -> str:
        return (
            f"RunContext(run_id={self.run_id!r}, run_step={self.run_step}, tool_name={self.tool_name!r}, "
            f"retry={self.retry}, deps={self.deps!r})"
        )


def partial_output_context(ctx: RunContext[DepsT]) -> RunContext[DepsT]:
    """A copy of `ctx` for output validators checking a partial, streamed snapshot."""
    clone = cast("RunContext[DepsT]", object.__new__(RunContext))
    for name in RunContext.__slots__:
        setattr(clone, name, getattr(ctx, name))
    clone.partial_output = True
    return clone
