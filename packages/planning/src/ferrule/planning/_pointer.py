"""RFC 6901 JSON Pointers: parse, resolve in step outputs, assign into step inputs."""

from __future__ import annotations

from typing import Any
from typing import cast

from ._limits import MAX_POINTER_CHARS

__all__ = ["PointerError", "assign", "format_pointer", "parse_pointer", "resolve"]

_MISSING: Any = object()


class PointerError(ValueError):
    """A pointer is malformed, or names a value that does not exist."""


def parse_pointer(text: str) -> tuple[str, ...]:
    """The reference tokens of a JSON Pointer (`""` is the whole value, `/a/0` two tokens).

    A path without the leading `/` is read as if it had one, so the shorthand `temperature` means
    `/temperature`. `~1` and `~0` are unescaped to `/` and `~`; any other `~` sequence is refused.
    """
    if len(text) > MAX_POINTER_CHARS:
        raise PointerError(
            f"the JSON Pointer is {len(text)} characters long; the limit is {MAX_POINTER_CHARS}"
        )
    if text == "":
        return ()
    body = text[1:] if text.startswith("/") else text
    tokens: list[str] = []
    for raw in body.split("/"):
        rest = raw
        while "~" in rest:
            at = rest.index("~")
            if rest[at + 1 : at + 2] not in ("0", "1"):
                raise PointerError(
                    f"invalid escape in JSON Pointer {text!r}: '~' must be followed by 0 or 1 (RFC 6901)"
                )
            rest = rest[at + 2 :]
        tokens.append(raw.replace("~1", "/").replace("~0", "~"))
    return tuple(tokens)


def format_pointer(tokens: tuple[str, ...]) -> str:
    """The canonical RFC 6901 text of `tokens`."""
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


def _index(token: str, size: int, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return size
    if not token.isdigit() or not token.isascii() or (len(token) > 1 and token[0] == "0"):
        raise PointerError(f"{token!r} is not an array index")
    index = int(token)
    if index > size or (index == size and not allow_end):
        raise PointerError(f"index {index} is past the end of an array of {size}")
    return index


def resolve(value: Any, tokens: tuple[str, ...]) -> Any:
    """The value `tokens` point at in `value`; raises `PointerError` when there is none."""
    current = value
    for depth in range(len(tokens)):
        current = _member(current, tokens, depth, create=False)
    return current


def _member(current: Any, tokens: tuple[str, ...], depth: int, *, create: bool) -> Any:
    """The member `tokens[depth]` of `current`, one step of a walk down `tokens`; with `create`, a
    missing object member is created as `{}` (the walk of `assign` to its target's parent)."""
    token = tokens[depth]
    if isinstance(current, dict):
        members = cast("dict[str, Any]", current)
        found: Any = members.get(token, _MISSING)
        if found is _MISSING:
            if not create:
                raise PointerError(f"no member {token!r} at {format_pointer(tokens[:depth]) or 'the root'}")
            found = members[token] = {}
        return found
    if isinstance(current, list):
        items = cast("list[Any]", current)
        return items[_index(token, len(items), allow_end=False)]
    where = format_pointer(tokens[:depth]) or "the root"
    if create:
        raise PointerError(f"{where} is a {_kind(current)}, so {token!r} cannot be set inside it")
    raise PointerError(f"{where} is a {_kind(current)}, which has no member {token!r}")


def assign(target: dict[str, Any], tokens: tuple[str, ...], value: Any) -> None:
    """Write `value` at `tokens` inside `target`, creating missing objects on the way.

    An array element is replaced, or appended with the index equal to the length (or `-`).
    """
    if not tokens:
        raise PointerError("the target path must name a member of the input, not the whole input")
    current: Any = target
    for depth in range(len(tokens) - 1):
        current = _member(current, tokens, depth, create=True)
    last = tokens[-1]
    if isinstance(current, dict):
        cast("dict[str, Any]", current)[last] = value
    elif isinstance(current, list):
        items = cast("list[Any]", current)
        index = _index(last, len(items), allow_end=True)
        if index == len(items):
            items.append(value)
        else:
            items[index] = value
    else:
        where = format_pointer(tokens[:-1]) or "the root"
        raise PointerError(f"{where} is a {_kind(current)}, so {last!r} cannot be set inside it")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`, `1` equals `1.0`, containers compare member by member."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        left, right = cast("list[Any]", a), cast("list[Any]", b)
        return len(left) == len(right) and all(json_equal(x, y) for x, y in zip(left, right, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        left_d, right_d = cast("dict[str, Any]", a), cast("dict[str, Any]", b)
        return left_d.keys() == right_d.keys() and all(json_equal(v, right_d[k]) for k, v in left_d.items())
    return _same_scalar(cast("object", a), cast("object", b))


def _same_scalar(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b
