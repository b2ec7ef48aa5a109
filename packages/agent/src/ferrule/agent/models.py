"""Deprecated name of [`ferrule.agent.model_strings`][ferrule.agent.model_strings], which resolves
`"provider:model"` strings to models; this alias stays for code written against the old name."""

from __future__ import annotations

from .model_strings import ENTRY_POINT_GROUP
from .model_strings import KNOWN_PACKAGES
from .model_strings import UnknownModelError
from .model_strings import infer_model
from .model_strings import installed_providers

__all__ = ["ENTRY_POINT_GROUP", "KNOWN_PACKAGES", "UnknownModelError", "infer_model", "installed_providers"]
