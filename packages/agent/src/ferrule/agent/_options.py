"""The keyword options the entry points of `Agent` share, as `TypedDict`s for `**options: Unpack[...]`."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import Generic

from typing_extensions import TypedDict
from typing_extensions import TypeVar

if TYPE_CHECKING:
    from ferrule.core.messages import Message
    from ferrule.core.model import Model
    from ferrule.core.settings import ModelSettings
    from ferrule.core.usage import UsageLimits

    from ._queue import PendingMessageQueue
    from .capabilities import Capability
    from .capabilities import CapabilityLayer
    from .context_budget import ContextBudget
    from .correlation import RunCorrelation
    from .toolsets import AbstractToolset

__all__ = ["RESUME_KEYS", "RUN_KEYS", "ResumeOptions", "RunOptions", "SharedOptions", "check_keys"]

DepsT = TypeVar("DepsT", default=None)


class SharedOptions(TypedDict, Generic[DepsT], total=False):
    """The options of every entry point, starting or resuming a run."""

    deps: DepsT
    """The run's dependencies, reaching tools and instructions as `ctx.deps`."""
    model: Model | str | None
    """The model of this run instead of the agent's (a `Model` or a model string)."""
    model_settings: ModelSettings | None
    """Settings merged over the agent's for this run."""
    usage_limits: UsageLimits | None
    """Token and request limits of this run instead of the agent's."""
    timeout: float | None
    """Seconds the run may take, tightening the agent's `run_timeout`."""
    toolsets: Sequence[AbstractToolset[DepsT]]
    """Toolsets added to the agent's for this run."""
    capabilities: Sequence[Capability[DepsT]]
    """Capabilities added for this run."""
    capability_layers: Sequence[CapabilityLayer]
    """Capability layers added for this run."""
    history_processors: Sequence[Callable[..., Any]]
    """History processors run after the agent's, before every model request."""
    context_budget: ContextBudget | None
    """The context budget of this run."""
    pending_messages: PendingMessageQueue | None
    """A queue whose messages join the history between steps."""
    correlation: RunCorrelation | None
    """Correlation IDs for the `run_start` hook event and the agent span."""
    trace_parent: Any
    """An OpenTelemetry `Context`: the agent span's parent."""


class RunOptions(SharedOptions[DepsT], total=False):
    """Keyword options of `Agent.run`, `run_sync`, `run_until_pause`, `iter` and `run_stream`."""

    message_history: Sequence[Message] | None
    """The conversation so far; the prompt is appended to it."""
    instructions: str | Sequence[str] | None
    """Instructions for this run, after the agent's."""


class ResumeOptions(SharedOptions[DepsT], total=False):
    """Keyword options of `Agent.resume`, `resume_sync` and `resume_stream`."""

    run_id: str | None
    """Load the paused state of this run from the agent's `checkpoint_store`."""
    state_id: str | None
    """With `run_id`: the checkpoint the decisions were made for."""
    integrity_key: bytes | None
    """The key a serialized paused state was signed with."""


RUN_KEYS: frozenset[str] = RunOptions.__optional_keys__
"""Every key of `RunOptions`."""
RESUME_KEYS: frozenset[str] = ResumeOptions.__optional_keys__
"""Every key of `ResumeOptions`."""


def check_keys(method: str, options: Mapping[str, Any], keys: frozenset[str]) -> None:
    """Refuse a keyword the entry point does not take, as Python does for a named parameter."""
    if not keys.issuperset(options):
        name = min(set(options) - keys)
        raise TypeError(f"{method}() got an unexpected keyword argument {name!r}")
