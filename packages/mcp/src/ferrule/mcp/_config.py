"""Server configurations in the common `mcpServers` JSON format, with `${VAR}` expansion."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import cast

from ferrule.core import bounded_json

from ._errors import MCPConfigError
from ._toolset import MCPServerHTTP
from ._toolset import MCPServerStdio
from ._toolset import MCPToolset

if TYPE_CHECKING:
    from ferrule.core.url_policy import UrlPolicy

__all__ = ["expand_env", "load_mcp_config"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_STDIO_KEYS = frozenset({"command", "args", "env", "cwd", "type", "description", "disabled"})
_HTTP_KEYS = frozenset({"url", "headers", "type", "description", "disabled"})


def expand_env(value: str, env: Mapping[str, str], where: str) -> str:
    """Replace `${NAME}` and `${NAME:-default}` in `value` from `env`; a missing `NAME` without default fails."""

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = env.get(name)
        if found is not None:
            return found
        if default is not None:
            return default
        raise MCPConfigError(
            f"{where}: the environment variable {name!r} is not set; set it, or write ${{{name}:-default}} "
            "to give a default"
        )

    return _VAR.sub(replace, value)


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in cast("list[Any]", value)):
        raise MCPConfigError(f"{where} must be a list of strings")
    return cast("list[str]", value)


def _mapping(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in cast("dict[Any, Any]", value).items()
    ):
        raise MCPConfigError(f"{where} must be an object of strings")
    return cast("dict[str, str]", value)


def load_mcp_config(
    source: str | os.PathLike[str] | bytes | Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    url_policy: UrlPolicy | None = None,
    **options: Any,
) -> list[MCPToolset]:
    """Build servers from an `{"mcpServers": {name: {...}}}` document (a path, JSON bytes, or a mapping).

    Each entry is either a stdio server (`command`, `args`, `env`, `cwd`) or a streamable-HTTP
    server (`url`, `headers`; `type` may be `"http"` or `"streamable-http"`). `${VAR}` and
    `${VAR:-default}` are expanded in every string from `env` (default: `os.environ`); a variable
    that is not set and has no default is an error naming the entry. The entry's name becomes the
    server's `id`; `description` and `disabled` are honoured, other keys are rejected. `url_policy`
    goes to the HTTP servers; `options` (e.g. `required`, `namespace=True`, `timeout`) to every server.

    The document is read with the bounded-JSON `CLI_CONFIG` limits.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    if isinstance(source, Mapping):
        document: Any = source
    else:
        if isinstance(source, bytes):
            data, origin = source, "the configuration"
        else:
            path = Path(source)
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise MCPConfigError(f"cannot read the MCP configuration {str(path)!r}: {exc}") from exc
            origin = str(path)
        try:
            document = bounded_json.decode(data, limits=bounded_json.CLI_CONFIG)
        except bounded_json.JsonError as exc:
            raise MCPConfigError(f"{origin} is not a usable JSON document: {exc}") from exc
    if not isinstance(document, Mapping) or not isinstance(
        cast("Mapping[str, Any]", document).get("mcpServers"), Mapping
    ):
        raise MCPConfigError('an MCP configuration must be an object with an "mcpServers" object')
    entries = cast("Mapping[str, Any]", cast("Mapping[str, Any]", document)["mcpServers"])
    servers: list[MCPToolset] = []
    for name, entry in entries.items():
        where = f"mcpServers.{name}"
        if not isinstance(entry, Mapping):
            raise MCPConfigError(f"{where} must be an object")
        spec = cast("Mapping[str, Any]", entry)
        if spec.get("disabled") is True:
            continue
        description = spec.get("description")
        if description is not None and not isinstance(description, str):
            raise MCPConfigError(f"{where}.description must be a string")
        kind = spec.get("type")
        if "url" in spec:
            unknown = set(spec) - _HTTP_KEYS
            if kind not in (None, "http", "streamable-http", "streamable_http", "streamableHttp"):
                raise MCPConfigError(f"{where}.type {kind!r} is not supported; use a streamable-HTTP server")
            if unknown:
                raise MCPConfigError(f"{where} has unknown keys: {', '.join(sorted(unknown))}")
            url = spec["url"]
            if not isinstance(url, str):
                raise MCPConfigError(f"{where}.url must be a string")
            headers = {
                k: expand_env(v, environ, f"{where}.headers.{k}")
                for k, v in _mapping(spec.get("headers", {}), f"{where}.headers").items()
            }
            servers.append(
                MCPServerHTTP(
                    expand_env(url, environ, f"{where}.url"),
                    id=name,
                    headers=headers,
                    description=description,
                    url_policy=url_policy,
                    **options,
                )
            )
        elif "command" in spec:
            unknown = set(spec) - _STDIO_KEYS
            if kind not in (None, "stdio"):
                raise MCPConfigError(
                    f"{where}.type {kind!r} does not match a stdio server (it has a command)"
                )
            if unknown:
                raise MCPConfigError(f"{where} has unknown keys: {', '.join(sorted(unknown))}")
            command = spec["command"]
            if not isinstance(command, str) or not command:
                raise MCPConfigError(f"{where}.command must be a non-empty string")
            args = [
                expand_env(a, environ, f"{where}.args[{i}]")
                for i, a in enumerate(_strings(spec.get("args", []), f"{where}.args"))
            ]
            child_env = {
                k: expand_env(v, environ, f"{where}.env.{k}")
                for k, v in _mapping(spec.get("env", {}), f"{where}.env").items()
            }
            cwd = spec.get("cwd")
            if cwd is not None and not isinstance(cwd, str):
                raise MCPConfigError(f"{where}.cwd must be a string")
            servers.append(
                MCPServerStdio(
                    expand_env(command, environ, f"{where}.command"),
                    args,
                    id=name,
                    env=child_env,
                    cwd=expand_env(cwd, environ, f"{where}.cwd") if cwd is not None else None,
                    description=description,
                    **options,
                )
            )
        else:
            raise MCPConfigError(f'{where} needs either "command" (a stdio server) or "url" (an HTTP server)')
    return servers
