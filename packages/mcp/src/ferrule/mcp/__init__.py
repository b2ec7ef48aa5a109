"""MCP for ferrule: MCP servers as agent toolsets, and ferrule agents and tools as MCP servers.

```python
from ferrule.agent import Agent
from ferrule.mcp import MCPServerStdio

time = MCPServerStdio("uvx", ["mcp-server-time", "--local-timezone", "UTC"], id="time")
agent = Agent("openai:gpt-5-mini", toolsets=[time])
```

Servers connect on first use (lazily, once for concurrent callers), their tools are checked
against the local JSON Schema dialect, and everything they send is bounded and treated as
untrusted data. Importing this package does not import the `mcp` SDK; connecting does.
"""

from __future__ import annotations

from ._callbacks import sampling_with_model
from ._capability import MCPCapabilityProvider
from ._config import expand_env, load_mcp_config
from ._errors import (
    MCPConfigError,
    MCPConnectionError,
    MCPConnectionLostError,
    MCPError,
    MCPProtocolError,
    MCPResultTooLargeError,
    MCPServerClosedError,
    MCPServerUnavailableError,
    MCPTimeoutError,
    MCPToolCallError,
)
from ._serve import ExposedMCPServer, expose_agent, expose_tools
from ._toolset import (
    ApprovalPolicy,
    MCPServerHTTP,
    MCPServerInProcess,
    MCPServerStdio,
    MCPToolInfo,
    MCPToolset,
)
from ._types import (
    ElicitationHandler,
    ElicitationRequest,
    ElicitationResponse,
    EventHandler,
    MCPEvent,
    MCPEventKind,
    MCPLimits,
    SamplingHandler,
    SamplingRequest,
    SamplingResponse,
    StderrPolicy,
)

__version__ = "0.1.0"

__all__ = [
    "ApprovalPolicy",
    "ElicitationHandler",
    "ElicitationRequest",
    "ElicitationResponse",
    "EventHandler",
    "ExposedMCPServer",
    "MCPCapabilityProvider",
    "MCPConfigError",
    "MCPConnectionError",
    "MCPConnectionLostError",
    "MCPError",
    "MCPEvent",
    "MCPEventKind",
    "MCPLimits",
    "MCPProtocolError",
    "MCPResultTooLargeError",
    "MCPServerClosedError",
    "MCPServerHTTP",
    "MCPServerInProcess",
    "MCPServerStdio",
    "MCPServerUnavailableError",
    "MCPTimeoutError",
    "MCPToolCallError",
    "MCPToolInfo",
    "MCPToolset",
    "SamplingHandler",
    "SamplingRequest",
    "SamplingResponse",
    "StderrPolicy",
    "expand_env",
    "expose_agent",
    "expose_tools",
    "load_mcp_config",
    "sampling_with_model",
    "__version__",
]
