"""The preflight limit check behind `ferrule.core.bounded_json`.

Nothing here loops over characters in Python, and nothing builds JSON values. The check runs in
stages, each of which only runs when the previous ones could not rule a limit out:

1. From the length and a few `bytes.count` calls, decide which limits the document could possibly
   exceed. Small documents stop here.
2. Escaped backslashes and quotes are overwritten with two neutral bytes (one C-level `re.sub`,
   positions unchanged), so that every remaining `"` delimits a string and strings match as
   `"[^"]*"`, which the regex engine runs as a memchr-like loop.
3. C-level prefilters: a `translate` + substring search for over-long runs of number characters, a
   quote-anchored search for over-long gaps between quotes. Both over-approximate (a run inside a
   string also counts), so they only decide whether the exact scan needs to look at that limit.
   Depth (when members need no counting) is proven on the bracket skeleton instead: when no
   string holds a bracket, the innermost `[]` and `{}` pairs are peeled off with `bytes.replace`,
   one level per call, and a skeleton that empties within `max_depth` calls is within the limit.
4. The exact scan: one compiled pattern consumes a run of unremarkable content in C and stops at a
   token Python must look at (a bracket, a member separator when counting, a string or number
   over its bound, the end). The pattern also swallows whole containers up to a few levels deep,
   with their member counts bounded by counted repetitions, so Python takes roughly one step per
   large subtree, and long collections are counted in chunks of separators.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Final
from typing import NamedTuple

__all__ = ["LimitExceeded", "Malformed", "Plan", "check"]


class LimitExceeded(Exception):
    """Internal signal: a limit was exceeded; `bounded_json` turns it into `JsonLimitError`."""

    def __init__(self, limit: str, actual: int, position: int | None) -> None:
        super().__init__(limit)
        self.limit = limit
        self.actual = actual
        self.position = position


class Malformed(Exception):
    """Internal signal: the scan found a syntax error; `bounded_json` turns it into `MalformedJsonError`."""

    def __init__(self, reason: str, position: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.position = position


class Plan(NamedTuple):
    """Which limits a document could exceed; every `False` is proven unreachable."""

    depth: bool
    items: bool
    strings: bool
    numbers: bool


_NUMBER_CHARS: Final = rb"\-+.0-9eE"
_NUMBER_RUN: Final = re.compile(rb"[" + _NUMBER_CHARS + rb"]*")
_NUMBER_MARKS: Final = bytes(0x31 if chr(c) in "-+.0123456789eE" else 0x20 for c in range(256))
# Escaped backslashes and quotes, overwritten so that every remaining quote delimits a string.
_ESCAPED_QUOTE_OR_BACKSLASH: Final = re.compile(rb'\\[\\"]')
# How many container levels one regex match may swallow. Deeper swallowing means fewer Python
# steps but more rescanning when a subtree turns out too deep (or too long) to be swallowed.
_SWALLOW_LEVELS: Final = 4


def _neutralize_escapes(buf: bytes | bytearray) -> bytes | bytearray:
    """`buf` with every `\\\\` and `\\"` escape replaced by `__`; same length, same positions."""
    if b"\\" not in buf:
        return buf
    return _ESCAPED_QUOTE_OR_BACKSLASH.sub(b"__", buf)


@functools.lru_cache(maxsize=32)
def _long_gap(max_string_bytes: int) -> re.Pattern[bytes]:
    return re.compile(rb'"[^"]{' + str(max_string_bytes + 1).encode() + rb"}")


# Item counting consumes separators in chunks, so that a long collection costs Python one step per
# chunk rather than per member. A chunk fails (and a smaller one is tried) near the collection's
# end or before a member that cannot be swallowed; the scan then stays on smaller chunks for that
# collection until the obstacle is behind it, so failed attempts do not rescan the same members.
_CHUNK_LEVELS: Final = ((256, 16), (16,), ())
# Chunks are only tried in collections that have already shown this many members one by one:
# most collections Python sees are objects with a few members, where chunks would just fail.
_CHUNK_AFTER: Final = 16


@functools.lru_cache(maxsize=128)
def _pattern(
    structure: bool,
    items: int | None,
    string_bound: int | None,
    number_bound: int | None,
    swallow: int,
    chunk_level: int,
) -> re.Pattern[bytes]:
    """Compile the run-and-terminator pattern for one combination of checks, bounds and depth budget.

    The input has had its escaped quotes neutralized, so `"[^"]*"` is exactly one string.
    `items` is the per-collection maximum when members are counted, else `None`.
    """
    excluded = b'"'
    if structure:
        excluded += rb"\[\]{}"
    if items is not None:
        # Separators of the collection Python is tracking must reach Python to be counted.
        excluded += b","
    if number_bound is not None:
        excluded += rb"\-0-9"
    scalars = [rb"[^" + excluded + rb"]++"]
    if string_bound is None:
        scalars.append(rb'"[^"]*+"')
    else:
        scalars.append(rb'"[^"]{0,' + str(string_bound).encode() + rb'}+"')
    if number_bound is not None:
        scalars.append(
            rb"[\-0-9]["
            + _NUMBER_CHARS
            + rb"]{0,"
            + str(number_bound - 1).encode()
            + rb"}+(?!["
            + _NUMBER_CHARS
            + rb"])"
        )

    def run(atoms: list[bytes]) -> bytes:
        return rb"(?:" + rb"|".join(atoms) + rb")*+"

    # Whole containers nested at most `swallow` levels are consumed in C: their depth is within
    # budget, their strings and numbers within bounds and, when counting, their member count
    # within `items` (one optional separator per counted repetition).
    atoms = scalars
    for _ in range(swallow):
        body = run(atoms)
        if items is not None:
            body = rb"(?:,?+" + body + rb"){0," + str(items).encode() + rb"}+"
        atoms = [*scalars, rb"[\[{]" + body + rb"[\]}]"]
    top = run(atoms)
    terminators = [rb'(?P<s>"[^"]*+")', rb"(?P<e>\Z)"]
    if structure:
        counted: list[bytes] = []
        if items is not None:
            counted = [
                rb"(?P<k" + str(size).encode() + rb">(?:," + top + rb"){" + str(size).encode() + rb"}+)"
                for size in _CHUNK_LEVELS[chunk_level]
            ]
            counted.append(rb"(?P<m>,)")
        terminators[:0] = [rb"(?P<o>[\[{])", rb"(?P<c>[\]}])", *counted]
    if number_bound is not None:
        terminators.append(rb"(?P<n>[\-0-9])")
    # Anything else stops the run without being a token: an unterminated string.
    terminators.append(rb"(?P<x>)")
    return re.compile(rb"(?s)" + top + rb"(?:" + rb"|".join(terminators) + rb")")


_U_ESCAPE: Final = re.compile(rb"\\u([0-9a-fA-F]{4})")
_ONE_BYTE_U: Final = tuple(b"\\u00" + bytes([digit]) for digit in b"01234567")
_TWO_BYTE_U: Final = tuple(b"\\u0" + bytes([digit]) for digit in b"1234567")
_SURROGATE_U: Final = tuple(b"\\u" + bytes([d, x]) for d in b"dD" for x in b"89abcdefABCDEF")


def _decoded_length(original: bytes | bytearray, text: bytes | bytearray, start: int, end: int) -> int:
    """Exact UTF-8 length of the decoded JSON string whose encoded content is at `[start, end)`.

    `text` is `original` with escaped backslashes and quotes neutralized, so every backslash left
    in it starts an escape. Only called for strings whose encoded length is over the limit.
    """
    length = end - start
    in_original = original.count(b"\\", start, end)
    if not in_original:
        return length
    remaining = text.count(b"\\", start, end)
    # `\\` (two backslashes) and `\"` (one) were neutralized; in valid content the
    # non-overlapping count of backslash pairs is exactly the number of escaped backslashes.
    pairs = original.count(b"\\\\", start, end)
    neutralized = in_original - pairs - remaining
    u_escapes = text.count(b"\\u", start, end)
    # Every escape but \uXXXX encodes one byte in two.
    decoded = length - neutralized - (remaining - u_escapes)
    if not u_escapes:
        return decoded
    if u_escapes <= 32:
        # Few escapes: classify each; many: count each class with a few dozen C-level searches.
        previous_high_end = -1
        for match in _U_ESCAPE.finditer(text, start, end):
            code = int(match.group(1), 16)
            if 0xD800 <= code <= 0xDBFF:
                decoded -= 4  # first half of a pair (a lone surrogate is rejected by the decoder)
                previous_high_end = match.end()
            elif 0xDC00 <= code <= 0xDFFF and match.start() == previous_high_end:
                decoded -= 4  # second half: the pair's 12 bytes decode to 4
                previous_high_end = -1
            else:
                decoded -= 5 if code < 0x80 else 4 if code < 0x800 else 3
                previous_high_end = -1
        return decoded
    # A \uXXXX escape is 6 bytes for 1 to 3 bytes of UTF-8; a surrogate pair is 12 for 4.
    one = sum(text.count(prefix, start, end) for prefix in _ONE_BYTE_U)
    two = text.count(b"\\u00", start, end) - one + sum(text.count(p, start, end) for p in _TWO_BYTE_U)
    halves = sum(text.count(prefix, start, end) for prefix in _SURROGATE_U)
    three = u_escapes - one - two - halves
    # A lone surrogate is rejected by the decoder, so every half counts as half of a pair.
    return decoded - 6 * u_escapes + one + 2 * two + 3 * three + 2 * halves


# Up to this size counting brackets and commas in the document is cheaper than building the
# skeleton (brackets, quotes and commas only) and counting them there.
_SKELETON_ABOVE: Final = 64 * 1024
_NOT_SKELETON: Final = bytes(range(256)).translate(None, b'[]{}",')


def _skeleton(text: bytes | bytearray) -> bytes | bytearray:
    """The brackets, quotes and commas of `text`, in order."""
    return text.translate(None, _NOT_SKELETON)


def _shallow(skeleton: bytes | bytearray, max_depth: int) -> bool:
    """Whether the document whose `_skeleton` (escapes neutralized) this is provably nests at most
    `max_depth` levels, with every bracket matched; `False` means "not proven": the exact scan decides.

    All in C: when no string holds a bracket, drop the quotes and peel the innermost `[]` and `{}`
    pairs off, one `bytes.replace` per level.
    """
    skeleton = skeleton.translate(None, b",")
    quotes = skeleton.count(b'"')
    if len(skeleton) - quotes <= max_depth:
        return True  # too few brackets to nest deeper, wherever they are
    if quotes:
        # Greedy non-overlapping `""` matches consume every quote only if each string's opening
        # quote is directly followed by its closing one, i.e. no string holds a bracket (those
        # rare documents are left to the exact scan).
        if skeleton.count(b'""') * 2 != quotes:
            return False
        skeleton = skeleton.translate(None, b'"')
    # A replace removes the innermost pairs of one kind and so lowers the nesting by at most one:
    # the number of replaces that changed something bounds the depth from above.
    peeled = 0
    while skeleton:
        before = len(skeleton)
        for pair in (b"[]", b"{}"):
            shorter = skeleton.replace(pair, b"")
            if len(shorter) != len(skeleton):
                peeled += 1
                if peeled > max_depth:
                    return False
                skeleton = shorter
        if len(skeleton) == before:
            return False  # unbalanced or mismatched brackets: the exact scan reports where
    return True


def check(
    buf: bytes | bytearray,
    *,
    max_depth: int,
    max_string_bytes: int,
    max_items: int,
    max_number_chars: int,
) -> None:
    """Check depth, item counts and string and number lengths of `buf` against the limits.

    Raises `LimitExceeded` or `Malformed`. Syntax beyond bracket matching and string termination
    is left to the decoder.
    """
    # Every check skipped here is provably satisfied.
    n = len(buf)
    # A string's decoded UTF-8 is never longer than its encoded content, which is at most n - 2.
    strings = n - 2 > max_string_bytes
    numbers = n > max_number_chars
    skeleton: bytes | bytearray | None = None
    # Brackets and commas inside strings only make their counts larger, so both bounds are
    # conservative. A collection with more than max_items members has at least max_items commas.
    if n <= _SKELETON_ABOVE:
        depth = n > max_depth and buf.count(b"[") + buf.count(b"{") > max_depth
        items = n > 2 * max_items and buf.count(b",") >= max_items
        if not (depth or items or strings or numbers):
            return
        text = _neutralize_escapes(buf)
    else:
        text = _neutralize_escapes(buf)
        skeleton = _skeleton(text)
        commas = skeleton.count(b",")
        depth = len(skeleton) - commas - skeleton.count(b'"') > max_depth
        items = n > 2 * max_items and commas >= max_items
    numbers = numbers and b"1" * (max_number_chars + 1) in text.translate(_NUMBER_MARKS)
    strings = strings and _long_gap(max_string_bytes).search(text) is not None
    # Counting members needs the exact scan, which then checks the depth as well.
    if depth and not items and _shallow(_skeleton(text) if skeleton is None else skeleton, max_depth):
        depth = False
    if not (depth or items or numbers or strings):
        return
    _scan(
        text,
        buf,
        Plan(depth=depth, items=items, strings=strings, numbers=numbers),
        max_depth=max_depth,
        max_string_bytes=max_string_bytes,
        max_items=max_items,
        max_number_chars=max_number_chars,
    )


def _scan(  # noqa: C901 - the hot scan loop; helpers would cost a call per token
    text: bytes | bytearray,
    original: bytes | bytearray,
    checks: Plan,
    *,
    max_depth: int,
    max_string_bytes: int,
    max_items: int,
    max_number_chars: int,
) -> None:
    """The exact scan over `text` (escapes neutralized); string lengths are measured in `original`."""
    structure = checks.depth or checks.items
    string_bound = max_string_bytes if checks.strings else None
    number_bound = max_number_chars if checks.numbers else None
    items = max_items if checks.items else None
    swallow = _SWALLOW_LEVELS if structure else 0
    # patterns[level][b] swallows containers at most b levels deep (b shrinks near max_depth) and
    # counts separators with the chunk sizes of `level`; each is compiled on first use.
    patterns: list[list[Callable[[bytes | bytearray, int], re.Match[bytes] | None] | None]] = [
        [None] * (swallow + 1) for _ in range(len(_CHUNK_LEVELS) if items is not None else 1)
    ]
    # A chunk of some size means every larger one failed: continue at the level it leads.
    chunk_results = {f"k{sizes[0]}": (sizes[0], level) for level, sizes in enumerate(_CHUNK_LEVELS) if sizes}
    single_level = len(_CHUNK_LEVELS) - 1 if items is not None else 0
    openers: list[int] = []
    commas: list[int] = []
    levels: list[int] = [single_level]  # chunk level per open collection, plus the top level
    pos = 0
    while True:
        level = levels[-1]
        budget = min(swallow, max_depth - len(openers))
        match = patterns[level][budget]
        if match is None:
            match = _pattern(structure, items, string_bound, number_bound, budget, level).match
            patterns[level][budget] = match
        m = match(text, pos)
        if m is None:  # pragma: no cover - the empty fallback alternative always matches
            raise Malformed("unexpected input", pos)
        kind = m.lastgroup
        end = m.end()
        if kind == "m":
            if commas:
                commas[-1] += 1
                # Singles until the collection proves long; a single after a chunk means it failed.
                levels[-1] = 0 if level == single_level and commas[-1] == _CHUNK_AFTER else single_level
        elif kind in chunk_results:
            size, level = chunk_results[kind]
            if commas:
                commas[-1] += size
            levels[-1] = level
        elif kind == "o":
            openers.append(text[end - 1])
            commas.append(0)
            levels.append(single_level)
            if len(openers) > max_depth:
                raise LimitExceeded("max_depth", len(openers), end - 1)
        elif kind == "c":
            if not openers:
                raise Malformed(f"unexpected {chr(text[end - 1])!r}", end - 1)
            # '[' + 2 == ']' and '{' + 2 == '}'
            if text[end - 1] - openers.pop() != 2:
                raise Malformed(f"mismatched {chr(text[end - 1])!r}", end - 1)
            levels.pop()
            # k members are separated by k - 1 commas.
            seen = commas.pop()
            if commas and commas[-1] >= _CHUNK_AFTER:
                levels[-1] = 0  # the child that stopped the chunks is behind us
            if items is not None and seen >= items:
                raise LimitExceeded("max_items", seen + 1, end - 1)
        elif kind == "s":
            start = m.start("s")
            if commas and commas[-1] >= _CHUNK_AFTER:
                levels[-1] = 0  # the string that stopped the chunks is behind us
            if string_bound is not None and end - start - 2 > string_bound:
                decoded = _decoded_length(original, text, start + 1, end - 1)
                if decoded > string_bound:
                    raise LimitExceeded("max_string_bytes", decoded, start)
        elif kind == "n":
            start = end - 1
            run = _NUMBER_RUN.match(text, start)
            length = run.end() - start if run is not None else 1
            raise LimitExceeded("max_number_chars", length, start)
        elif kind == "e":
            if openers:
                raise Malformed(f"unclosed {chr(openers[-1])!r}", end)
            return
        else:
            raise Malformed("unterminated string", end)
        pos = end
