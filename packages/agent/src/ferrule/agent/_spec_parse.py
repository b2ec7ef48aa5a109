"""Reading agent specifications: bounded JSON or YAML into plain data, secret scan, strict conversion.

Nothing here reads the environment, imports a provider or calls application code: the result is
plain data (dicts, lists, strings, numbers, booleans, `None`) checked against the `CLI_CONFIG`
bounds, scanned for credential-looking values, and checked for unknown keys against the target
type before msgspec converts it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import Final
from typing import Literal
from typing import assert_never
from typing import cast

import msgspec
import msgspec.inspect as mi

from ferrule.core import bounded_json
from ferrule.core import bounded_yaml
from ferrule.core.errors import UserError
from ferrule.core.install import install_hint

if TYPE_CHECKING:
    from ferrule.core.redaction import Redactor

__all__ = [
    "DocumentFormat",
    "SpecError",
    "SpecParseError",
    "check_keys",
    "find_secrets",
    "load_document",
    "render_path",
]

DocumentFormat = Literal["json", "yaml"]
"""The two document syntaxes a specification or configuration may use."""

Path = tuple[str | int, ...]


class SpecError(UserError):
    """An agent specification (or a configuration read the same way) cannot be used."""


class SpecParseError(SpecError):
    """The document is malformed, over its bounds, has unknown keys or credential-looking values."""


def render_path(path: Path) -> str:
    """`$.model.name` / `$.tools[2]` for a path into a document."""
    out = ["$"]
    for part in path:
        out.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    return "".join(out)


# --- documents ------------------------------------------------------------------------------------


def load_document(
    data: bytes | str,
    *,
    format: DocumentFormat = "json",
    limits: bounded_json.JsonLimits = bounded_json.CLI_CONFIG,
    origin: str = "the document",
) -> Any:
    """Plain data from a bounded JSON or YAML document; `SpecParseError` on anything else.

    YAML is read by `ferrule.core.bounded_yaml` (install `ferrule-agent[yaml]`): YAML 1.2's core
    schema (`yes`/`on` and dates stay strings), bounded by `limits` while reading as JSON is, with
    duplicate keys, anchors and aliases, explicit tags, non-string keys and several documents refused.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > limits.max_bytes:
        raise SpecParseError(
            f"{origin} is {len(raw)} bytes, more than the limit of {limits.max_bytes} bytes ({limits.name})"
        )
    if format == "json":
        try:
            return bounded_json.decode(raw, limits=limits)
        except bounded_json.JsonError as exc:
            raise SpecParseError(f"{origin} is not a usable JSON document: {exc}") from None
    return _load_yaml(raw, limits, origin)


def _load_yaml(raw: bytes, limits: bounded_json.JsonLimits, origin: str) -> Any:
    try:
        return bounded_yaml.load_yaml(raw, limits)
    except ImportError:
        raise SpecParseError(
            f"{origin} is YAML, which needs PyYAML: {install_hint('ferrule-agent[yaml]')} (or use JSON)"
        ) from None
    except bounded_json.JsonLimitError as exc:
        if exc.limit == "max_depth":
            raise SpecParseError(
                f"{origin} nests deeper than the limit of {exc.maximum} levels ({exc.profile})"
            ) from None
        raise SpecParseError(f"{origin} is not a usable YAML document: {exc}") from None
    except bounded_yaml.YamlError as exc:
        raise SpecParseError(_yaml_message(exc, origin)) from None


def _yaml_message(exc: bounded_yaml.YamlError, origin: str) -> str:
    at = "" if exc.line is None else f" (line {exc.line})"
    match exc.problem:
        case "alias":
            return (
                f"{origin} uses a YAML alias{at}; anchors and aliases are not accepted in "
                "configuration files: write the value out"
            )
        case "anchor":
            return (
                f"{origin} defines a YAML anchor{at}; anchors and aliases are not accepted in "
                "configuration files"
            )
        case "documents":
            return f"{origin} must hold exactly one YAML document, found more than one{at}"
        case "empty":
            return f"{origin} must hold exactly one YAML document, found 0"
        case "not_utf8":
            return f"{origin} is not UTF-8: {exc}"
        case "malformed":
            return f"{origin} is not valid YAML: {exc}"
        case "tag" | "key" | "duplicate_key":
            return f"{origin} is not a usable YAML document: {exc}"
        case _:
            assert_never(exc.problem)


# --- secrets --------------------------------------------------------------------------------------

# Key names that carry a credential when their value is a string. Names ending in `_env` hold the
# *name* of an environment variable and are allowed (their value must look like one).
_SENSITIVE_KEY: Final = re.compile(
    r"(?:^|[_.-])(?:token|secret|password|passwd|pwd|credentials?|authorization|cookie|bearer)(?:$|[_.-])"
    r"|api[_-]?key|private[_-]?key|access[_-]?key|signing[_-]?key|secret[_-]?key"
    r"|(?:access|refresh|auth|id|session|bearer)[_-]?token",
    re.IGNORECASE,
)

# Credential shapes beyond those `ferrule.core.redaction` knows (which are checked through a
# shapes-only `Redactor`): GitHub, Slack and AWS keys, JWTs and private key blocks.
_MORE_SHAPES: Final = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.)"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
_URL: Final = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
_ENV_REFERENCE: Final = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")
_SCHEME_ONLY: Final = re.compile(r"^\s*(?:[A-Za-z]+\s+)?$")
ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""What an environment variable name may look like."""


def _names_env(key: str) -> bool:
    lower = key.lower()
    return lower.endswith(("_env", "_env_var", "-env"))


def find_secrets(value: Any, path: Path = ()) -> list[str]:
    """Where a document holds credential-looking values, each as `"$.path: why"` (values never shown).

    Rejected: a non-empty string under a credential-named key (`api_key`, `token`, `Authorization`,
    `*_secret`, ...) unless it only references environment variables (`${NAME}`, optionally after a
    scheme word such as `Bearer`); a well-known token shape anywhere (`sk-...`, `AIza...`, a bearer
    token, a private key block, ...); a URL with a password or a credential query parameter. Keys
    ending in `_env` name a variable and must hold a valid variable name.
    """
    found: list[str] = []
    stack: list[tuple[Any, Path, str | None]] = [(value, path, None)]
    while stack:
        item, where, key = stack.pop()
        if isinstance(item, dict):
            for child_key, child in cast("dict[Any, Any]", item).items():
                name = child_key if isinstance(child_key, str) else str(child_key)
                stack.append((child, (*where, name), name))
        elif isinstance(item, list):
            stack.extend((child, (*where, i), key) for i, child in enumerate(cast("list[Any]", item)))
        elif isinstance(item, str) and item:
            problem = _string_problem(item, key)
            if problem is not None:
                found.append(f"{render_path(where)}: {problem}")
    found.sort()
    return found


def _string_problem(text: str, key: str | None) -> str | None:
    if key is not None and _names_env(key):
        if not ENV_NAME.match(text):
            return "must name an environment variable (letters, digits and '_'), not hold a value"
        return None
    if key is not None and _SENSITIVE_KEY.search(key.lower()):
        remainder = _ENV_REFERENCE.sub("", text)
        if remainder == text or not _SCHEME_ONLY.match(remainder):
            return (
                f"{key!r} looks like a credential; credentials come only from the environment: "
                f"name the variable instead (e.g. {key}_env, or ${{NAME}} where references are expanded)"
            )
        return None
    if _shapes().text(text) != text or _MORE_SHAPES.search(text):
        return "holds a value shaped like a credential (an API key or token); credentials come only from the environment"
    for match in _URL.finditer(text):
        problem = _url_problem(match.group(0))
        if problem is not None:
            return problem
    return None


@functools.cache
def _shapes() -> Redactor:
    from ferrule.core.redaction import Redactor

    return Redactor()  # no configured secrets: it replaces only the well-known credential shapes


def _url_problem(url: str) -> str | None:
    from urllib.parse import parse_qsl
    from urllib.parse import urlsplit

    from ferrule.core.redaction import is_sensitive_param

    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.password:
        return "holds a URL with a password; credentials come only from the environment"
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if is_sensitive_param(name) and not _ENV_REFERENCE.fullmatch(value):
            return "holds a URL with a credential query parameter; credentials come only from the environment"
    return None


# --- strict conversion ------------------------------------------------------------------------------


def check_keys(value: Any, tp: Any, *, exclude: Mapping[type, frozenset[str]] | None = None) -> list[str]:
    """Every key of `value` that `tp` (a msgspec-convertible type) has no field for, as `$.path`.

    msgspec ignores unknown fields of Structs that do not forbid them (the core settings types
    don't); a specification must not silently drop a misspelt key, so they are found here first.
    `exclude` names fields of a Struct type that a document may not set (callables, for example).
    """
    found: list[str] = []
    _walk(value, mi.type_info(tp), (), found, exclude or {})
    found.sort()
    return found


def _walk(
    value: Any, info: mi.Type, path: Path, found: list[str], exclude: Mapping[type, frozenset[str]]
) -> None:
    match info:
        case mi.StructType():
            if not isinstance(value, dict):
                return
            mapping = cast("dict[str, Any]", value)
            barred = exclude.get(info.cls, frozenset())
            fields = {f.encode_name: f for f in info.fields if f.name not in barred}
            allowed = set(fields)
            if info.tag_field is not None:
                allowed.add(info.tag_field)
            for key, child in mapping.items():
                if key not in allowed:
                    found.append(render_path((*path, key)))
                elif key in fields:
                    _walk(child, fields[key].type, (*path, key), found, exclude)
        case mi.UnionType():
            structs = [t for t in info.types if isinstance(t, mi.StructType)]
            if isinstance(value, dict) and structs:
                chosen = structs[0]
                for candidate in structs:
                    tag_field = candidate.tag_field
                    if (
                        tag_field is not None
                        and cast("dict[str, Any]", value).get(tag_field) == candidate.tag
                    ):
                        chosen = candidate
                        break
                _walk(value, chosen, path, found, exclude)
                return
            for member in info.types:
                if isinstance(member, (mi.ListType, mi.DictType)) and isinstance(value, (list, dict)):
                    _walk(value, member, path, found, exclude)
                    return
        case mi.ListType() | mi.SetType() | mi.FrozenSetType() | mi.VarTupleType():
            if isinstance(value, list):
                for i, child in enumerate(cast("list[Any]", value)):
                    _walk(child, info.item_type, (*path, i), found, exclude)
        case mi.DictType():
            if isinstance(value, dict):
                for key, child in cast("dict[str, Any]", value).items():
                    _walk(child, info.value_type, (*path, key), found, exclude)
        case _:
            pass


def convert(value: Any, tp: type[Any], origin: str) -> Any:
    """`value` converted to `tp` by msgspec, a failure raised as `SpecParseError` naming the path."""
    try:
        return msgspec.convert(value, tp, strict=True)
    except msgspec.ValidationError as exc:
        raise SpecParseError(f"{origin}: {exc}") from None
    except (ValueError, TypeError, UserError) as exc:
        raise SpecParseError(f"{origin}: {exc}") from None


def checked_convert(raw: Any, tp: type[Any], origin: str, hint: str = "") -> Any:
    """`raw` (plain data) converted to `tp` after the secret scan and the unknown-key check."""
    secrets = find_secrets(raw)
    if secrets:
        raise SpecParseError(f"{origin} holds credential-looking values: " + "; ".join(secrets))
    unknown = check_keys(raw, tp)
    if unknown:
        raise SpecParseError(f"{origin} has unknown keys: {', '.join(unknown)}{hint}")
    return convert(raw, tp, origin)
