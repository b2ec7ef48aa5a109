"""Strict, bounded YAML for data files: JSON's data model in YAML's syntax.

Every YAML data file ferrule reads (evaluation datasets and reports, agent specifications, the
CLI's `--spec`/`--config` files) goes through `load_yaml`. It builds values from PyYAML's event
stream itself, so it enforces a [`JsonLimits`][ferrule.core.bounded_json.JsonLimits] profile while
reading (size, depth, string bytes, collection members, number characters) and refuses what a data
file never needs: duplicate keys, anchors and aliases (the "billion laughs" expansion), explicit
tags, non-string keys and more than one document. Plain scalars are resolved by YAML 1.2's core
schema (`true`, `null`, `12`, `1.5`, `.inf`); `yes`/`no`/`on`/`off`, dates and `1:30` stay
strings. The dumper quotes every string that a reader could mistake for something else, so dump and
load round-trip exactly.

PyYAML is imported only when a function here runs (install the `ferrule-core[yaml]` extra).

```python
from ferrule.core import bounded_json
from ferrule.core.bounded_yaml import load_yaml

config = load_yaml(raw, bounded_json.CLI_CONFIG)
```
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any
from typing import Final
from typing import Literal

from .bounded_json import JsonLimitError
from .bounded_json import JsonLimits
from .install import install_hint

__all__ = ["YamlError", "YamlProblem", "dump_yaml", "load_yaml"]

YamlProblem = Literal[
    "malformed", "not_utf8", "empty", "documents", "alias", "anchor", "tag", "key", "duplicate_key"
]
"""What a `YamlError` refused: malformed YAML, bytes that are not UTF-8, no document, more than one
document, an alias, an anchor, an explicit tag, a key that is not a string, or a duplicate key."""


class YamlError(ValueError):
    """A YAML document is malformed or uses a feature data files refuse."""

    def __init__(self, message: str, *, problem: YamlProblem, line: int | None = None) -> None:
        self.problem: YamlProblem = problem
        """What was refused, for callers that word their own message."""
        self.line = line
        """The 1-based line of the problem, when known."""
        super().__init__(f"{message} (line {line})" if line is not None else message)


_NULL: Final = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE: Final = frozenset({"true", "True", "TRUE"})
_FALSE: Final = frozenset({"false", "False", "FALSE"})
_INT: Final = re.compile(r"[-+]?[0-9]+")
_OCT: Final = re.compile(r"0o[0-7]+")
_HEX: Final = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT: Final = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INF: Final = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_NAN: Final = re.compile(r"\.(?:nan|NaN|NAN)")
# Words YAML 1.1 readers (PyYAML's own loader, many tools) take for booleans: quoted when dumped.
_YAML11_WORDS: Final = frozenset(
    w for word in ("y", "n", "yes", "no", "on", "off") for w in (word, word.capitalize(), word.upper())
)
_PLAIN_SAFE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


def _need_pyyaml() -> None:
    """Import PyYAML on first use (so `ferrule.core` never loads it by itself), or say what to install."""
    try:
        import yaml  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        raise ImportError(
            f"reading or writing YAML needs PyYAML: {install_hint('ferrule-core[yaml]')}"
        ) from None


def _scalar(text: str, limits: JsonLimits, line: int) -> Any:
    """The value of a plain scalar under the core schema."""
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    numeric = _INT.fullmatch(text) or _OCT.fullmatch(text) or _HEX.fullmatch(text) or _FLOAT.fullmatch(text)
    if numeric or _INF.fullmatch(text) or _NAN.fullmatch(text):
        if len(text) > limits.max_number_chars:
            raise JsonLimitError(
                "max_number_chars", maximum=limits.max_number_chars, actual=len(text), profile=limits.name
            )
        if _INT.fullmatch(text):
            return int(text)
        if _OCT.fullmatch(text):
            return int(text[2:], 8)
        if _HEX.fullmatch(text):
            return int(text[2:], 16)
        if _NAN.fullmatch(text):
            return math.nan
        if _INF.fullmatch(text):
            return -math.inf if text.startswith("-") else math.inf
        return float(text)
    return text


def _check_string(text: str, limits: JsonLimits) -> None:
    # Every character takes at least one UTF-8 byte: only long strings need encoding.
    if len(text) * 4 > limits.max_string_bytes:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limits.max_string_bytes:
            raise JsonLimitError(
                "max_string_bytes", maximum=limits.max_string_bytes, actual=size, profile=limits.name
            )


class _Frame:
    __slots__ = ("container", "key", "line")

    def __init__(self, container: dict[str, Any] | list[Any], line: int) -> None:
        self.container = container
        self.key: str | None = None  # the pending key of a mapping, once read
        self.line = line


def _text(data: str | bytes, limits: JsonLimits) -> str:
    """The document as text, refused past `limits.max_bytes` (counted in UTF-8) or as invalid UTF-8."""
    if isinstance(data, bytes):
        if len(data) > limits.max_bytes:
            raise JsonLimitError("max_bytes", maximum=limits.max_bytes, actual=len(data), profile=limits.name)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise YamlError(f"invalid UTF-8 at byte {exc.start}", problem="not_utf8") from None
    if len(data) > limits.max_bytes or len(data.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise JsonLimitError(
            "max_bytes",
            maximum=limits.max_bytes,
            actual=len(data.encode("utf-8", "surrogatepass")),
            profile=limits.name,
        )
    return data


def _check_room(container: list[Any] | dict[str, Any], limits: JsonLimits) -> None:
    """Refuse one more member in a collection that holds `max_items` already."""
    if len(container) >= limits.max_items:
        raise JsonLimitError(
            "max_items", maximum=limits.max_items, actual=len(container) + 1, profile=limits.name
        )


def _add_to(frame: _Frame, value: Any, line: int, limits: JsonLimits) -> None:
    """Put `value` into the open collection: a list item, a mapping key, or the pending key's value."""
    if isinstance(frame.container, list):
        _check_room(frame.container, limits)
        frame.container.append(value)
        return
    if frame.key is None:
        if not isinstance(value, str):
            raise YamlError(f"mapping keys must be strings, got {value!r}", problem="key", line=line)
        if value in frame.container:
            raise YamlError(f"duplicate key {value!r}", problem="duplicate_key", line=line)
        _check_room(frame.container, limits)
        frame.key = value
    else:
        frame.container[frame.key] = value
        frame.key = None


def _open(
    stack: list[_Frame], container: dict[str, Any] | list[Any], tag: Any, line: int | None, limits: JsonLimits
) -> None:
    """Start a collection: refused with a tag, past `limits.max_depth` or as a mapping key."""
    if tag is not None:
        raise YamlError(f"explicit tags ({tag}) are not allowed in data files", problem="tag", line=line)
    if len(stack) + 1 > limits.max_depth:
        raise JsonLimitError(
            "max_depth", maximum=limits.max_depth, actual=len(stack) + 1, profile=limits.name
        )
    if stack and isinstance(stack[-1].container, dict) and stack[-1].key is None:
        raise YamlError("mapping keys must be strings, not collections", problem="key", line=line)
    stack.append(_Frame(container, line or 0))


def load_yaml(data: str | bytes, limits: JsonLimits) -> Any:
    """Parse one YAML document into JSON values (dict, list, str, int, float, bool, None) within `limits`.

    Raises `YamlError` for malformed or refused YAML, `JsonLimitError` for a limit and
    `ImportError` (naming the extra to install) when PyYAML is missing.
    """
    _need_pyyaml()
    import yaml

    text = _text(data, limits)
    loader_class: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    stack: list[_Frame] = []
    root: Any = None
    documents = 0
    done = False

    def add(value: Any, line: int) -> None:
        nonlocal root, done
        if stack:
            _add_to(stack[-1], value, line, limits)
        else:
            root, done = value, True

    try:
        while True:
            event = loader.get_event()
            if event is None:  # pragma: no cover - the stream always ends with StreamEndEvent
                break
            line = event.start_mark.line + 1 if event.start_mark is not None else None
            if isinstance(event, yaml.StreamEndEvent):
                break
            if isinstance(event, (yaml.StreamStartEvent, yaml.DocumentEndEvent)):
                continue
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise YamlError(
                        "more than one YAML document; a file holds exactly one",
                        problem="documents",
                        line=line,
                    )
                continue
            if isinstance(event, yaml.AliasEvent):
                raise YamlError("aliases (*name) are not allowed in data files", problem="alias", line=line)
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                raise YamlError(
                    f"anchors (&{anchor}) are not allowed in data files", problem="anchor", line=line
                )
            tag = getattr(event, "tag", None)
            if isinstance(event, yaml.ScalarEvent):
                if tag is not None:
                    raise YamlError(
                        f"explicit tags ({tag}) are not allowed in data files", problem="tag", line=line
                    )
                _check_string(event.value, limits)
                plain = not event.style and event.implicit[0]  # libyaml says "" where PyYAML says None
                add(_scalar(event.value, limits, line or 0) if plain else event.value, line or 0)
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                _open(stack, [] if isinstance(event, yaml.SequenceStartEvent) else {}, tag, line, limits)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                frame = stack.pop()
                add(frame.container, frame.line)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlError(
            f"malformed YAML: {exc.problem or exc.context}",
            problem="malformed",
            line=None if mark is None else mark.line + 1,
        ) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"malformed YAML: {exc}", problem="malformed") from None
    finally:
        loader.dispose()
    if not done:
        raise YamlError("the YAML document is empty", problem="empty")
    return root


def _plain_ok(text: str) -> bool:
    return (
        _PLAIN_SAFE.fullmatch(text) is not None
        and text not in _YAML11_WORDS
        and isinstance(_scalar(text, _UNBOUNDED, 0), str)
    )


_UNBOUNDED: Final = JsonLimits(
    name="unbounded",
    max_bytes=2**31 - 1,
    max_depth=512,
    max_string_bytes=2**31 - 1,
    max_items=2**31 - 1,
    max_number_chars=2**31 - 1,
)


def dump_yaml(value: Any) -> str:
    """Write JSON values (dict, list, str, int, float, bool, None) as block YAML that `load_yaml` reads back equal.

    Raises `ImportError` (naming the extra to install) when PyYAML is missing.
    """
    _need_pyyaml()
    import yaml

    return yaml.dump(
        value, Dumper=_dumper(), sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )


@functools.cache
def _dumper() -> Any:
    import yaml

    class Dumper(yaml.SafeDumper):
        """Quotes ambiguous strings and writes floats and null the way `load_yaml` resolves them."""

    def represent_str(dumper: yaml.SafeDumper, data: str) -> Any:
        # types-PyYAML leaves represent_scalar's `value` unannotated.
        return dumper.represent_scalar(  # pyright: ignore[reportUnknownMemberType]
            "tag:yaml.org,2002:str", data, style=None if _plain_ok(data) else '"'
        )

    def represent_float(dumper: yaml.SafeDumper, data: float) -> Any:
        if math.isnan(data):
            text = ".nan"
        elif math.isinf(data):
            text = ".inf" if data > 0 else "-.inf"
        else:
            text = repr(data)  # the shortest form that reads back equal
            if "." not in text and "e" in text:
                text = text.replace("e", ".0e", 1)  # `1.0e+20`: a float to YAML 1.1 readers too
        return dumper.represent_scalar("tag:yaml.org,2002:float", text)  # pyright: ignore[reportUnknownMemberType]

    def represent_none(dumper: yaml.SafeDumper, data: None) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:null", "null")  # pyright: ignore[reportUnknownMemberType]

    Dumper.add_representer(str, represent_str)
    Dumper.add_representer(float, represent_float)
    Dumper.add_representer(type(None), represent_none)
    return Dumper
