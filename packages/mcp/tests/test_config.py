"""`load_mcp_config`: the common `mcpServers` JSON, `${VAR}` expansion, bounded decoding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ferrule.core import bounded_json
from ferrule.core.url_policy import UrlPolicy
from ferrule.mcp import MCPConfigError
from ferrule.mcp import MCPServerHTTP
from ferrule.mcp import MCPServerStdio
from ferrule.mcp import expand_env
from ferrule.mcp import load_mcp_config

CONFIG = {
    "mcpServers": {
        "time": {
            "command": "${PY}",
            "args": ["-m", "mcp_server_time", "--local-timezone", "${TZ_NAME:-UTC}"],
            "env": {"API_KEY": "${API_KEY}"},
            "description": "Clocks and time zones",
        },
        "docs": {
            "type": "http",
            "url": "https://${HOST}/mcp",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
        },
        "off": {"command": "nothing", "disabled": True},
    }
}
ENV = {"PY": "/usr/bin/python3", "API_KEY": "k-123", "HOST": "docs.example.com", "TOKEN": "t-456"}


def test_loads_stdio_and_http_servers_with_expansion(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(CONFIG))
    time, docs = load_mcp_config(path, env=ENV, timeout=5)
    assert isinstance(time, MCPServerStdio)
    assert (time.id, time.command, time.args) == (
        "time",
        "/usr/bin/python3",
        ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    )
    assert time.env == {"API_KEY": "k-123"}
    assert time.description == "Clocks and time zones"
    assert time.timeout == 5
    assert isinstance(docs, MCPServerHTTP)
    assert docs.url == "https://docs.example.com/mcp"
    assert docs.header_names == ["Authorization"]
    assert "t-456" not in repr(docs)


def test_missing_variable_names_the_entry_and_the_variable() -> None:
    env = {k: v for k, v in ENV.items() if k != "TOKEN"}
    with pytest.raises(
        MCPConfigError, match=r"mcpServers\.docs\.headers\.Authorization: .*'TOKEN' is not set"
    ):
        load_mcp_config(CONFIG, env=env)


def test_expand_env_defaults_and_literals() -> None:
    assert expand_env("a${X}b${Y:-dflt}c", {"X": "1"}, "w") == "a1bdfltc"
    assert expand_env("${X:-}", {}, "w") == ""
    assert expand_env("no vars $HOME", {}, "w") == "no vars $HOME"


def test_url_policy_applies_to_http_entries() -> None:
    local = {"mcpServers": {"dev": {"url": "http://127.0.0.1:8000/mcp"}}}
    with pytest.raises(Exception, match="plain http:// is not allowed"):
        load_mcp_config(local, env={})
    (server,) = load_mcp_config(local, env={}, url_policy=UrlPolicy.local("http://127.0.0.1:8000"))
    assert server.id == "dev"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"servers": {}}, '"mcpServers" object'),
        ({"mcpServers": {"x": {}}}, 'needs either "command"'),
        ({"mcpServers": {"x": {"command": "a", "args": "b"}}}, "args must be a list of strings"),
        ({"mcpServers": {"x": {"command": "a", "autoApprove": []}}}, "unknown keys: autoApprove"),
        ({"mcpServers": {"x": {"url": "https://e.com", "type": "sse"}}}, "type 'sse' is not supported"),
        ({"mcpServers": {"x": {"command": "a", "env": {"A": 1}}}}, "env must be an object of strings"),
    ],
)
def test_invalid_documents_are_rejected(document: dict[str, object], message: str) -> None:
    with pytest.raises(MCPConfigError, match=message):
        load_mcp_config(document, env={})


def test_config_files_are_decoded_with_bounds(tmp_path: Path) -> None:
    limit = bounded_json.CLI_CONFIG.max_depth
    path = tmp_path / "deep.json"
    path.write_text('{"mcpServers": ' + "[" * limit + "]" * limit + "}")
    with pytest.raises(MCPConfigError, match="not a usable JSON document"):
        load_mcp_config(path)
    with pytest.raises(MCPConfigError, match="is not a usable JSON document"):
        load_mcp_config(b"{not json")
    with pytest.raises(MCPConfigError, match="cannot read"):
        load_mcp_config(tmp_path / "missing.json")
