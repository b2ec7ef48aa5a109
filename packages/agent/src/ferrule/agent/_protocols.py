"""The few structural types that let a low module name what a higher one provides.

The agent's modules form a layered order: a module never imports a higher one, not even for a
type. Where a low module must still describe an object that a higher one builds, it names one of
these protocols instead; the higher module's class satisfies it structurally.
"""

from __future__ import annotations

from typing import Any
from typing import Protocol

__all__ = ["ActiveCapabilities"]


class ActiveCapabilities(Protocol):
    """What `RunContext.capabilities` offers (a [`CapabilitySnapshot`][ferrule.agent.CapabilitySnapshot])."""

    @property
    def capabilities(self) -> tuple[Any, ...]:
        """The active `Capability` objects, in composition order."""
        ...

    @property
    def active(self) -> tuple[str, ...]:
        """IDs of the active capabilities, in composition order."""
        ...

    @property
    def loaded_on_demand(self) -> tuple[str, ...]:
        """The subset of `active` loaded through `load_capability`, in load order."""
        ...

    def is_active(self, capability_id: str) -> bool:
        """Whether the capability `capability_id` is active."""
        ...
