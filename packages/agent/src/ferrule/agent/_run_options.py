"""The extension options of one run (`RunOptions`), without the extension machinery itself.

Every entry point reads these; the machinery (`_ext.RunExt`, capabilities, toolsets) is imported
only by a run that uses one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from ._queue import PendingMessageQueue
    from .capabilities import Capability
    from .capabilities import CapabilityLayer
    from .context_budget import ContextBudget
    from .toolsets import AbstractToolset

__all__ = ["EXTENSION_KEYS", "NO_OPTIONS", "RunOptions", "run_options"]


class RunOptions:
    """Run-level extension options, as passed to `run(...)`."""

    __slots__ = (
        "capabilities",
        "capability_layers",
        "context_budget",
        "history_processors",
        "pending_messages",
        "toolsets",
    )

    def __init__(
        self,
        *,
        toolsets: Sequence[AbstractToolset[Any]] = (),
        capabilities: Sequence[Capability[Any]] = (),
        capability_layers: Sequence[CapabilityLayer] = (),
        history_processors: Sequence[Any] = (),
        context_budget: ContextBudget | None = None,
        pending_messages: PendingMessageQueue | None = None,
    ) -> None:
        self.toolsets = list(toolsets)
        self.capabilities = list(capabilities)
        self.capability_layers = list(capability_layers)
        self.history_processors = list(history_processors)
        self.context_budget = context_budget
        self.pending_messages = pending_messages


NO_OPTIONS = RunOptions()

EXTENSION_KEYS = frozenset(RunOptions.__slots__)
"""The keyword options of an entry point that `run_options` reads, named as the fields of `RunOptions`
(a run without them has `NO_OPTIONS`)."""


def run_options(
    toolsets: Sequence[AbstractToolset[Any]],
    capabilities: Sequence[Capability[Any]],
    capability_layers: Sequence[CapabilityLayer],
    history_processors: Sequence[Callable[..., Any]],
    context_budget: ContextBudget | None,
    pending_messages: PendingMessageQueue | None,
) -> RunOptions:
    """The options of one `run(...)` call: the shared empty `NO_OPTIONS` when it passes none."""
    if (
        not toolsets
        and not capabilities
        and not capability_layers
        and not history_processors
        and context_budget is None
        and pending_messages is None
    ):
        return NO_OPTIONS  # the common case: no per-run extensions, nothing to build
    return RunOptions(
        toolsets=toolsets,
        capabilities=capabilities,
        capability_layers=capability_layers,
        history_processors=history_processors,
        context_budget=context_budget,
        pending_messages=pending_messages,
    )
