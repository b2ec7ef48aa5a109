"""Incremental repair of a streamed JSON prefix into a valid JSON snapshot.

The scanner reads each delta once and remembers the last point where the prefix, closed with the
brackets still open, is valid JSON. A snapshot is that prefix plus its closers; a value string that
is still streaming is closed where it stands, while an unfinished key, number or literal is dropped
(its final value is not known yet).
"""

from __future__ import annotations

from typing import Any

import msgspec

_WS = frozenset(" \t\r\n")
_SCALAR_START = frozenset("-0123456789tfn")

# scanner states
_VALUE = 0  # expecting a value
_KEY_OR_END = 1  # after "{": a key or "}"
_KEY = 2  # after "," in an object: a key
_COLON = 3  # after a key: ":"
_AFTER = 4  # after a value: "," or a closer
_STRING = 5  # inside a string
_SCALAR = 6  # inside a number or literal
_DONE = 7  # the top-level value is complete
_START = 8  # before the first bracket (prose or a code fence may precede the JSON)
_BROKEN = 9  # not JSON; no more snapshots


class JsonPrefix:
    """Accumulates JSON text and produces repaired snapshots of its prefix."""

    __slots__ = (
        "_escape_at",
        "_is_key",
        "_opened",
        "_safe_end",
        "_safe_stack",
        "_scan",
        "_stack",
        "_start_at",
        "_state",
        "_text",
        "max_chars",
    )

    def __init__(self, *, skip_prose: bool = False, max_chars: int = 1 << 20) -> None:
        self._text = ""
        self._scan = 0
        self._stack: list[str] = []
        self._state = _START if skip_prose else _VALUE
        self._is_key = False
        self._escape_at = -1
        self._safe_end = -1
        self._safe_stack: tuple[str, ...] = ()
        self._start_at = -1
        self._opened = False
        self.max_chars = max_chars

    @property
    def text(self) -> str:
        """The text accumulated so far."""
        return self._text

    def feed(self, delta: str) -> None:
        """Add more text."""
        if not delta:
            return
        self._text += delta
        if self._state == _BROKEN or len(self._text) > self.max_chars:
            self._state = _BROKEN
            return
        self._advance()

    def _safe(self, end: int) -> None:
        self._safe_end = end
        self._safe_stack = tuple(self._stack)

    def _value_done(self, end: int) -> int:
        """Mark a value ending at `end` safe; the state after it (`_advance` keeps it in a local)."""
        self._safe(end)
        return _AFTER if self._stack else _DONE

    def _advance(self) -> None:  # noqa: C901 - one pass of a per-character state machine; a helper per state costs a call per character
        text = self._text
        i = self._scan
        n = len(text)
        state = self._state
        stack = self._stack
        while i < n:
            if state == _STRING:
                if self._escape_at >= 0:
                    # Inside an escape: "\\x" is two chars, "\\uXXXX" six.
                    need = 6 if text[self._escape_at + 1 : self._escape_at + 2] == "u" else 2
                    if n - self._escape_at < need:
                        i = n
                        break
                    i = self._escape_at + need
                    self._escape_at = -1
                    continue
                quote = text.find('"', i)
                backslash = text.find("\\", i, quote if quote >= 0 else n)
                if backslash >= 0:
                    self._escape_at = backslash
                    i = backslash + 1
                    continue
                if quote < 0:
                    i = n
                    break
                i = quote + 1
                state = _COLON if self._is_key else self._value_done(i)
                continue
            ch = text[i]
            if state == _SCALAR:
                if ch in _WS or ch in ",]}":
                    state = self._value_done(i)
                    continue  # re-read the delimiter in the new state
                i += 1
                continue
            if ch in _WS:
                i += 1
                continue
            if state == _START:
                if ch in "{[":
                    state = _VALUE
                    continue
                i += 1
                continue
            if state == _DONE:
                i = n
                break
            if state == _VALUE:
                if self._start_at < 0:
                    self._start_at = i
                opened, self._opened = self._opened, False
                if ch == "{":
                    stack.append("{")
                    state = _KEY_OR_END
                    self._safe(i + 1)
                elif ch == "[":
                    stack.append("[")
                    state = _VALUE
                    self._safe(i + 1)
                    self._opened = True
                elif ch == '"':
                    state = _STRING
                    self._is_key = False
                elif ch == "]" and opened:
                    stack.pop()
                    state = self._value_done(i + 1)
                elif ch in _SCALAR_START:
                    state = _SCALAR
                else:
                    state = _BROKEN
                    break
                i += 1
                continue
            if state in (_KEY_OR_END, _KEY):
                if ch == '"':
                    state = _STRING
                    self._is_key = True
                elif ch == "}" and state == _KEY_OR_END:
                    stack.pop()
                    state = self._value_done(i + 1)
                else:
                    state = _BROKEN
                    break
                i += 1
                continue
            if state == _COLON:
                if ch != ":":
                    state = _BROKEN
                    break
                state = _VALUE
                i += 1
                continue
            if state == _AFTER:
                if ch == ",":
                    state = _KEY if stack[-1] == "{" else _VALUE
                elif ch in "}]":
                    if (ch == "}") != (stack[-1] == "{"):
                        state = _BROKEN
                        break
                    stack.pop()
                    state = self._value_done(i + 1)
                else:
                    state = _BROKEN
                    break
                i += 1
                continue
            state = _BROKEN  # pragma: no cover - every state is handled above
            break
        self._scan = i
        self._state = state

    def repaired(self) -> str | None:
        """The prefix made valid JSON, or `None` when nothing usable has arrived yet."""
        state = self._state
        if state in (_BROKEN, _START):
            return None
        start = self._start_at
        if start < 0:
            return None
        if state == _STRING and not self._is_key:
            end = self._escape_at if self._escape_at >= 0 else len(self._text)
            return self._text[start:end] + '"' + _closers(self._stack)
        if self._safe_end < 0:
            return None
        return self._text[start : self._safe_end] + _closers(self._safe_stack)

    def snapshot(self) -> tuple[bool, Any]:
        """`(True, value)` for a decodable repaired prefix, else `(False, None)`."""
        repaired = self.repaired()
        if repaired is None:
            return False, None
        try:
            return True, msgspec.json.decode(repaired)
        except msgspec.DecodeError:
            return False, None

    @property
    def complete(self) -> bool:
        """Whether the top-level value has been closed."""
        return self._state == _DONE


def _closers(stack: list[str] | tuple[str, ...]) -> str:
    return "".join("}" if c == "{" else "]" for c in reversed(stack))
