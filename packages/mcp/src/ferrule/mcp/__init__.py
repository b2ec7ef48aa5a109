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
from ._config import expand_env
from ._config import load_mcp_config
from ._errors import MCPConfigError
from ._errors import MCPConnectionError
from ._errors import MCPConnectionLostError
from ._errors import MCPError
from ._errors import MCPProtocolError
from ._errors import MCPResultTooLargeError
from ._errors import MCPServerClosedError
from ._errors import MCPServerUnavailableError
from ._errors import MCPTimeoutError
from ._errors import MCPToolCallError
from ._serve import ExposedMCPServer
from ._serve import expose_agent
from ._serve import expose_tools
from ._toolset import ApprovalPolicy
from ._toolset import MCPServerHTTP
from ._toolset import MCPServerInProcess
from ._toolset import MCPServerStdio
from ._toolset import MCPToolInfo
from ._toolset import MCPToolset
from ._types import ElicitationHandler
from ._types import ElicitationRequest
from ._types import ElicitationResponse
from ._types import EventHandler
from ._types import MCPEvent
from ._types import MCPEventKind
from ._types import MCPLimits
from ._types import SamplingHandler
from ._types import SamplingRequest
from ._types import SamplingResponse
from ._types import StderrPolicy

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
