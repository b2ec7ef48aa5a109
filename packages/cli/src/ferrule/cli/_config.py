"""The `--config` file: strict, bounded JSON; credentials only by the name of their variable."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from typing import Literal

import msgspec

from ferrule.core import bounded_json
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import UsageLimits

from ._exit import ConfigError
from ._files import read_bounded

__all__ = ["CONFIG_VERSION", "CliConfig", "ToolEntry", "load_config"]

CONFIG_VERSION = 1
"""The configuration format version this release reads."""

OutputMode = Literal["text", "json", "events"]
ApprovalMode = Literal["deferred", "deny", "prompt"]


class ToolEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One tool of the local manifest: a Python function, or an external tool described by a schema."""

    function: str | None = None
    """`package.module:function`, or `file.py:function` relative to the configuration's folder."""
    name: str | None = None
    """The tool's name (default: the function's name; required for external tools)."""
    description: str | None = None
    """What the tool does, for the model (default: the function's docstring)."""
    parameters: dict[str, Any] | None = None
    """The JSON Schema of an external tool's arguments."""
    external: bool = False
    """Executed outside ferrule: a call pauses the run; `--resume` supplies its result."""
    requires_approval: bool = False
    """Pause for a decision before each call."""


class CliConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a configuration file may set; command-line flags override every field."""

    version: int = CONFIG_VERSION
    """The format version (1)."""
    provider: str | None = None
    """The provider prefix used when `model` has none."""
    model: str | None = None
    """`provider:name`, or a name of `provider`'s."""
    api_key_env: str | None = None
    """The *name* of the environment variable holding the API key."""
    base_url: str | None = None
    """The provider's API root (proxies, OpenAI-compatible servers)."""
    allow_local_url: bool = False
    """Allow `base_url` on this machine or a private network (exactly that origin)."""
    system_prompt: str | None = None
    """The agent's instructions."""
    model_settings: ModelSettings | None = None
    """Portable model settings (`max_tokens`, `temperature`, ...)."""
    usage_limits: UsageLimits | None = None
    """Request, tool-call and token limits of a run."""
    timeout: float | None = None
    """Seconds one run may take."""
    spec: str | None = None
    """An agent specification file that defines the agent (relative to this file)."""
    history: str | None = None
    """The history file loaded before and saved after each run (relative to this file)."""
    paused_state: str | None = None
    """Where `deferred` approval writes the paused run (relative to this file)."""
    output: OutputMode | None = None
    """`text`, `json` or `events`."""
    approval: ApprovalMode | None = None
    """What a call needing approval does: `deferred` (pause, exit 10), `deny`, or `prompt` (ask)."""
    signing_key_env: str | None = None
    """The *name* of the variable whose value signs paused states (HMAC-SHA256)."""
    require_tool_approval: bool = False
    """Every manifest and MCP tool needs approval."""
    tools: list[ToolEntry] = msgspec.field(default_factory=list)  # pyright: ignore[reportUnknownVariableType]
    """The local tool manifest."""
    mcp_servers: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)  # pyright: ignore[reportUnknownVariableType]
    """MCP servers in the common `mcpServers` format (stdio `command`/`args`/`env`, or `url`)."""


def load_config(path: Path) -> CliConfig:
    """Read and check a configuration file (exit 3 on any problem)."""
    from ferrule.agent.spec import SpecParseError
    from ferrule.agent.spec import parse_document

    data = read_bounded(path, bounded_json.CLI_CONFIG.max_bytes, "configuration")
    try:
        config = parse_document(data, CliConfig, origin=f"the configuration {str(path)!r}")
    except SpecParseError as exc:
        raise ConfigError(str(exc)) from None
    if config.version != CONFIG_VERSION:
        raise ConfigError(
            f"the configuration {str(path)!r} has version {config.version}; this ferrule reads version 1"
        )
    return config
