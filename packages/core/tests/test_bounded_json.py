"""Bounded JSON: every limit at exactly its maximum and one past it, on the fast and the scanning path.

Documents are built so that the limit under test is the one the scan must check; the small ones also
exercise the fast path, where a document too short to exceed a limit is not scanned at all.
"""

from __future__ import annotations

import functools
import json
import random
import subprocess
import sys
from typing import Any
from typing import cast

import msgspec
import pytest

from ferrule.core import bounded_json as bj
from ferrule.core.bounded_json import JsonError
from ferrule.core.bounded_json import JsonLimitError
from ferrule.core.bounded_json import JsonLimits
from ferrule.core.bounded_json import JsonTypeError
from ferrule.core.bounded_json import MalformedJsonError
from ferrule.core.errors import FerruleError
from ferrule.core.errors import ResponseDecodeError

WIDE = JsonLimits(
    max_bytes=1 << 30,
    max_depth=512,
    max_string_bytes=1 << 30,
    max_items=1 << 30,
    max_number_chars=1 << 20,
)


def limits(**changes: int) -> JsonLimits:
    return msgspec.structs.replace(WIDE, **changes)


def rejects(doc: bytes | str, lim: JsonLimits, limit: str) -> JsonLimitError:
    with pytest.raises(JsonLimitError) as info:
        bj.validate(doc, lim)
    assert info.value.limit == limit
    # decode must reject the same document before decoding it
    with pytest.raises(JsonLimitError):
        bj.decode_value(doc, lim)
    return info.value


def accepts(doc: bytes | str, lim: JsonLimits) -> None:
    bj.validate(doc, lim)
    raw = doc.encode() if isinstance(doc, str) else doc
    assert bj.decode_value(doc, lim) == json.loads(raw)


# --- profiles -------------------------------------------------------------------------------


def test_profiles_are_named_and_registered() -> None:
    assert set(bj.PROFILES) == {
        "provider_response",
        "stream_event",
        "tool_arguments",
        "history",
        "paused_state",
        "mcp",
        "schema",
        "cli_config",
    }
    for name, profile in bj.PROFILES.items():
        assert profile.name == name
    assert bj.PROVIDER_RESPONSE.max_bytes == 32 * 1024 * 1024
    assert bj.TOOL_ARGUMENTS.max_depth == 64
    assert bj.SCHEMA.max_bytes == 256 * 1024
    assert bj.SCHEMA.max_depth == 32
    with pytest.raises(TypeError):
        bj.PROFILES["x"] = WIDE  # type: ignore[index]


@pytest.mark.parametrize(
    "changes",
    [
        {"max_bytes": 0},
        {"max_depth": -1},
        {"max_items": 0},
        {"max_number_chars": 0},
        {"max_string_bytes": -5},
        {"max_depth": bj.MAX_SUPPORTED_DEPTH + 1},
        {"max_bytes": 2**31},
    ],
)
def test_limits_reject_unusable_values(changes: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="JsonLimits"):
        limits(**changes)


def test_limits_reject_bools() -> None:
    with pytest.raises(ValueError, match="max_depth"):
        JsonLimits(max_bytes=10, max_depth=True, max_string_bytes=1, max_items=1, max_number_chars=1)


def test_limits_accept_supported_maximum_depth() -> None:
    assert limits(max_depth=bj.MAX_SUPPORTED_DEPTH).max_depth == 512


# --- max_bytes ------------------------------------------------------------------------------


def test_max_bytes_bytes_exact_and_over() -> None:
    doc = b'["abcdef"]'
    accepts(doc, limits(max_bytes=len(doc)))
    error = rejects(doc, limits(max_bytes=len(doc) - 1), "max_bytes")
    assert (error.maximum, error.actual) == (len(doc) - 1, len(doc))


def test_max_bytes_counts_utf8_bytes_of_str_input() -> None:
    doc = '["ééé"]'  # 7 characters, 10 bytes
    accepts(doc, limits(max_bytes=10))
    error = rejects(doc, limits(max_bytes=9), "max_bytes")
    assert error.actual == 10


def test_max_bytes_rejects_long_str_before_encoding() -> None:
    error = rejects("[" + "1," * 50 + "1]", limits(max_bytes=20), "max_bytes")
    assert error.actual == 103  # characters: a lower bound of the encoded size


@pytest.mark.parametrize("wrap", [bytearray, memoryview])
def test_max_bytes_buffers(wrap: Any) -> None:
    doc = b'{"a": [1, 2, 3]}'
    bj.validate(wrap(doc), limits(max_bytes=len(doc)))
    assert bj.decode_value(wrap(doc), limits(max_bytes=len(doc))) == {"a": [1, 2, 3]}
    with pytest.raises(JsonLimitError):
        bj.validate(wrap(doc), limits(max_bytes=len(doc) - 1))


# --- max_depth ------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5, 6, 9, 31, 32, 64])
@pytest.mark.parametrize("opener", ["[", "{"])
def test_max_depth_exact_and_over(depth: int, opener: str) -> None:
    def nest(n: int) -> bytes:
        if opener == "[":
            return ("[" * n + "1" + "]" * n).encode()
        return ('{"k":' * n + "1" + "}" * n).encode()

    accepts(nest(depth), limits(max_depth=depth))
    error = rejects(nest(depth + 1), limits(max_depth=depth), "max_depth")
    assert error.actual == depth + 1
    assert error.position is not None


@pytest.mark.parametrize("depth", [3, 4, 5, 6, 7])
def test_max_depth_inside_long_documents(depth: int) -> None:
    # Many shallow siblings (swallowed by the scanner) followed by one subtree at the limit.
    def doc(inner: int) -> bytes:
        siblings = ",".join(['{"a":[1,"x,y"]}'] * 300)
        return f"[{siblings},{'[' * (inner - 1)}0{']' * (inner - 1)}]".encode()

    accepts(doc(depth), limits(max_depth=depth))
    rejects(doc(depth + 1), limits(max_depth=depth), "max_depth")


# Documents over 64 KiB whose bracket count exceeds the limit take the C-level depth proof (the
# bracket skeleton peeled level by level); whatever it cannot prove goes to the exact scan.
_PAD = ",".join(['{"a":[1,"x"]}'] * 6000)


def _large(subtree: str) -> bytes:
    doc = f"[{_PAD},{subtree}]".encode()
    assert len(doc) > 64 * 1024
    return doc


@pytest.mark.parametrize("depth", [3, 4, 5, 8, 64, 128])
@pytest.mark.parametrize("shape", ["[", "{", "mixed"])
def test_max_depth_in_large_documents(depth: int, shape: str) -> None:
    def nest(levels: int) -> str:
        # `levels` counts the subtree's own levels; the outer array adds one.
        out = "0"
        for level in range(levels):
            bracket = shape if shape != "mixed" else "[{"[level % 2]
            out = f"[{out}]" if bracket == "[" else f'{{"k":{out}}}'
        return out

    accepts(_large(nest(depth - 1)), limits(max_depth=depth))
    error = rejects(_large(nest(depth)), limits(max_depth=depth), "max_depth")
    assert error.actual == depth + 1


def test_brackets_inside_strings_cannot_hide_depth_in_large_documents() -> None:
    # Counted naively, the string brackets would close and reopen levels (depth 3): it is 4.
    subtree = '[["]]",[0],"[["]]'
    accepts(_large(subtree), limits(max_depth=4))
    rejects(_large(subtree), limits(max_depth=3), "max_depth")
    # Brackets in strings that do balance change nothing either.
    accepts(_large('[["[{}]",[0]]]'), limits(max_depth=4))
    rejects(_large('[["[{}]",[[0]]]]'), limits(max_depth=4), "max_depth")


@pytest.mark.parametrize("subtree", ["[{]}", "[[0]", '"x"]', "{]"])
def test_unbalanced_brackets_in_large_documents_are_malformed(subtree: str) -> None:
    # Not proven shallow, so the exact scan (or, inside subtrees it swallows, the decoder) rejects them.
    for call in (bj.validate, bj.decode_value):
        with pytest.raises(MalformedJsonError):
            call(_large(subtree), limits(max_depth=8))


def test_max_depth_zero_allows_only_scalars() -> None:
    accepts(b'"[[["', limits(max_depth=0))
    accepts(b"  12  ", limits(max_depth=0))
    rejects(b"[]", limits(max_depth=0), "max_depth")


def test_brackets_inside_strings_do_not_count() -> None:
    doc = b'[["[[[[{{{{", "]]]]}}}}", "\\"[[[["]]'
    accepts(doc, limits(max_depth=2))


# --- max_string_bytes -----------------------------------------------------------------------


def test_max_string_bytes_plain_exact_and_over() -> None:
    accepts(b'"' + b"x" * 10 + b'"', limits(max_string_bytes=10))
    error = rejects(b'"' + b"x" * 11 + b'"', limits(max_string_bytes=10), "max_string_bytes")
    assert (error.maximum, error.actual, error.position) == (10, 11, 0)


def test_max_string_bytes_counts_utf8_bytes() -> None:
    doc = '["' + "é" * 5 + '"]'  # 10 UTF-8 bytes
    accepts(doc, limits(max_string_bytes=10))
    error = rejects(doc, limits(max_string_bytes=9), "max_string_bytes")
    assert error.actual == 10


def test_max_string_bytes_applies_to_keys() -> None:
    doc = b'{"' + b"k" * 8 + b'": 1, "v": "short"}'
    accepts(doc, limits(max_string_bytes=8))
    rejects(doc, limits(max_string_bytes=7), "max_string_bytes")


@pytest.mark.parametrize(
    ("escape", "decoded_bytes"),
    [
        ("\\n", 1),
        ("\\\\", 1),
        ('\\"', 1),
        ("\\/", 1),
        ("\\u0041", 1),
        ("\\u00e9", 2),
        ("\\u07FF", 2),
        ("\\u20ac", 3),
        ("\\ud83d\\ude00", 4),
        ("\\uD83D\\uDE00", 4),
    ],
)
@pytest.mark.parametrize("count", [3, 40])  # few escapes are classified one by one, many by counting
def test_max_string_bytes_measures_decoded_length(escape: str, decoded_bytes: int, count: int) -> None:
    # The encoded string is far over the limit; decoded, it is exactly at it.
    exact = count * decoded_bytes
    doc = ('{"s": "' + escape * count + '", "pad": "' + "p" * exact + '"}').encode()
    accepts(doc, limits(max_string_bytes=exact))
    error = rejects(doc, limits(max_string_bytes=exact - 1), "max_string_bytes")
    assert error.actual == exact


def test_max_string_bytes_mixed_escapes_and_backslash_runs() -> None:
    value = 'a\\"b\\\\u0041\\\\\\u00e9\n' * 20 + "😀é"
    doc = json.dumps({"s": value}, ensure_ascii=True).encode()
    size = len(value.encode())
    accepts(doc, limits(max_string_bytes=size))
    assert rejects(doc, limits(max_string_bytes=size - 1), "max_string_bytes").actual == size


def test_long_strings_with_commas_and_brackets() -> None:
    value = "[a, b], {c}, " * 50
    doc = json.dumps([value, [value]]).encode()
    accepts(doc, limits(max_string_bytes=len(value), max_items=2, max_depth=2))
    rejects(doc, limits(max_string_bytes=len(value) - 1, max_items=2), "max_string_bytes")


# --- max_items ------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 15, 16, 17, 255, 256, 257, 300, 600, 1000])
def test_max_items_arrays_exact_and_over(count: int) -> None:
    doc = json.dumps({"xs": list(range(count + 1))}).encode()
    accepts(doc, limits(max_items=count + 1))
    error = rejects(doc, limits(max_items=count), "max_items")
    assert (error.maximum, error.actual) == (count, count + 1)


@pytest.mark.parametrize("count", [1, 16, 256, 300])
def test_max_items_objects_exact_and_over(count: int) -> None:
    doc = json.dumps({f"k{i}": [i, "a,b"] for i in range(count + 1)}).encode()
    accepts(doc, limits(max_items=count + 1))
    assert rejects(doc, limits(max_items=count), "max_items").actual == count + 1


@pytest.mark.parametrize("count", [4, 20, 300])
def test_max_items_in_nested_collections(count: int) -> None:
    inner = [{"id": i, "tags": ["a", "b,c"], "deep": [[[[i]]]]} for i in range(count + 1)]
    doc = json.dumps([{"rows": inner}, {"rows": []}]).encode()
    accepts(doc, limits(max_items=count + 1))
    assert rejects(doc, limits(max_items=count), "max_items").actual == count + 1


def test_max_items_with_unswallowable_members() -> None:
    # Members too deep or too long for the scanner to consume in C interrupt the counted chunks.
    members = [[[[[[i]]]]] if i % 37 == 0 else ("s" * 80 if i % 53 == 0 else i) for i in range(400)]
    doc = json.dumps(members).encode()
    accepts(doc, limits(max_items=400, max_string_bytes=80))
    assert rejects(doc, limits(max_items=399, max_string_bytes=80), "max_items").actual == 400


def test_commas_inside_strings_are_not_separators() -> None:
    doc = json.dumps(["a,b,c,d,e,f", {"k,k,k": ",,,,"}]).encode()
    accepts(doc, limits(max_items=2))


def test_empty_collections() -> None:
    accepts(b'[[], {}, [[]], {"a": {}}]', limits(max_items=4, max_depth=3))


# --- max_number_chars -----------------------------------------------------------------------


@pytest.mark.parametrize("number", ["12345", "-1234", "1.5e-7", "-0.25E+10"])
def test_max_number_chars_exact_and_over(number: str) -> None:
    doc = f'{{"a": [1, {number}, 2]}}'.encode()
    accepts(doc, limits(max_number_chars=len(number)))
    error = rejects(doc, limits(max_number_chars=len(number) - 1), "max_number_chars")
    assert error.actual == len(number)
    assert doc[error.position :].startswith(number.encode())


def test_digits_inside_strings_are_not_numbers() -> None:
    accepts(b'["123456789012345", "1e10"]', limits(max_number_chars=2))


def test_long_number_in_scalar_document() -> None:
    accepts(b"123", limits(max_number_chars=3))
    rejects(b"1234", limits(max_number_chars=3), "max_number_chars")


# --- errors and messages --------------------------------------------------------------------


def test_limit_error_message_names_limit_profile_and_remedy() -> None:
    with pytest.raises(JsonLimitError) as info:
        bj.validate(b"[[[1]]]", msgspec.structs.replace(bj.TOOL_ARGUMENTS, max_depth=2))
    text = str(info.value)
    assert "max_depth=2" in text
    assert "'tool_arguments'" in text
    assert "msgspec.structs.replace(limits, max_depth=...)" in text
    assert info.value.profile == "tool_arguments"
    assert isinstance(info.value, JsonError)
    assert isinstance(info.value, FerruleError)


@pytest.mark.parametrize(
    "doc",
    [b"[1, 2", b"[1, 2}", b"[1]]", b'["abc', b"{1: 2}", b"[1, 2,]", b'[1, "a" "b"]', b"", b"nul"],
)
def test_malformed_json_from_decoder(doc: bytes) -> None:
    for call in (lambda: bj.validate(doc, WIDE), lambda: bj.decode_value(doc, WIDE)):
        with pytest.raises(MalformedJsonError) as info:
            call()
        assert info.value.reason
        assert info.value.position is not None
        assert 0 <= info.value.position <= len(doc)
        assert str(info.value).startswith(f"malformed JSON at byte {info.value.position}: ")


def test_malformed_json_reasons_and_positions() -> None:
    with pytest.raises(MalformedJsonError) as info:
        bj.decode_value(b"[1, 2,]", WIDE)
    assert info.value.reason == "trailing comma in array"
    with pytest.raises(MalformedJsonError) as info:
        bj.decode_value(b"[1, 2", WIDE)
    assert (info.value.reason, info.value.position) == ("truncated document", 5)


@pytest.mark.parametrize(
    ("doc", "reason", "at"),
    [
        (b'[[[[["a,b"]]]], 2}', "mismatched '}'", b"}"),
        (b'[[[[["a,b"]]]], 2]]', "unexpected ']'", b"]]"),  # the last one
        (b'[[[[["a,b"]]]], "abc', "unterminated string", b'"abc'),
        (b'[[[[["a,b"]]]], {"a": 2}', "unclosed '['", None),
    ],
)
def test_malformed_json_from_scan(doc: bytes, reason: str, at: bytes | None) -> None:
    # The comma inside the string makes item counting (and so the structural scan) run; the
    # outer collection is too deep to be consumed in one regex step, so the scan sees its brackets.
    # (Bracket pairs inside consumed subtrees are left to the decoder.)
    lim = limits(max_items=2)
    position = len(doc) if at is None else doc.rindex(at) + (1 if at == b"]]" else 0)
    for call in (lambda: bj.validate(doc, lim), lambda: bj.decode_value(doc, lim)):
        with pytest.raises(MalformedJsonError) as info:
            call()
        assert (info.value.reason, info.value.position) == (reason, position)


def test_invalid_utf8_and_lone_surrogates() -> None:
    with pytest.raises(MalformedJsonError, match="UTF-8"):
        bj.validate(b'["\xff"]', WIDE)
    with pytest.raises(MalformedJsonError):
        bj.decode_value(b'["\xff"]', WIDE)
    with pytest.raises(MalformedJsonError, match="surrogate"):
        bj.validate('["\ud800"]', WIDE)
    with pytest.raises(MalformedJsonError):
        bj.validate(b'["\\ud800"]', WIDE)


def test_is_valid() -> None:
    assert bj.is_valid(b'{"a": [1, 2]}', WIDE)
    assert not bj.is_valid(b'{"a": [1, 2]', WIDE)
    assert not bj.is_valid(b"[1, 2, 3]", limits(max_items=2))


# --- decode ---------------------------------------------------------------------------------


class Point(msgspec.Struct):
    x: int
    y: int


class Shape(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    points: list[Point]


def test_decode_typed() -> None:
    doc = b'{"name": "tri", "points": [{"x": 1, "y": 2}]}'
    shape = bj.decode(doc, type=Shape, limits=bj.TOOL_ARGUMENTS)
    assert shape == Shape(name="tri", points=[Point(1, 2)])


def test_decode_type_error_has_path() -> None:
    with pytest.raises(JsonTypeError) as info:
        bj.decode(b'{"name": "tri", "points": [{"x": 1, "y": "2"}]}', type=Shape, limits=WIDE)
    assert info.value.path == "$.points[0].y"
    assert "Expected `int`" in str(info.value)


def test_decode_out_of_range_number_is_a_type_error() -> None:
    with pytest.raises(JsonTypeError):
        bj.decode_value(b"1" * 5000, WIDE)


def test_decode_malformed() -> None:
    with pytest.raises(MalformedJsonError) as info:
        bj.decode(b'{"name": "tri",}', type=Shape, limits=WIDE)
    assert info.value.position == 15


def test_decode_limits_checked_before_decoding() -> None:
    calls: list[object] = []

    def hook(tp: type, obj: Any) -> Any:
        calls.append(obj)
        return obj

    with pytest.raises(JsonLimitError):
        bj.decode(b'[["x"]]', type=list[Any], limits=limits(max_depth=1), dec_hook=hook)
    assert calls == []


def test_decode_strict_flag() -> None:
    assert bj.decode(b'{"x": "1", "y": "2"}', type=Point, limits=WIDE, strict=False) == Point(1, 2)
    with pytest.raises(JsonTypeError):
        bj.decode(b'{"x": "1", "y": "2"}', type=Point, limits=WIDE)


def test_decoders_are_cached() -> None:
    first = bj._get_decoder(Shape, None, True)
    assert bj._get_decoder(Shape, None, True) is first
    assert bj._get_decoder(Shape, None, False) is not first


def test_decode_value_and_str_input() -> None:
    assert bj.decode_value('{"é": [1, 2.5, null, true]}', WIDE) == {"é": [1, 2.5, None, True]}


def test_import_is_cheap() -> None:
    code = (
        "import sys, ferrule.core.bounded_json; "
        "assert 'fastjsonschema' not in sys.modules; assert 'ferrule.core.json_schema' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- differential test against a reference measurement --------------------------------------

_ALPHABET = ["a", ",", "[", "]", "{", "}", '"', "\\", "\n", "é", "😀", " ", ":", "1", "e", "\u2028", "\x7f"]


def _random_string(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.choice([0, 1, 2, 5, 20, 40])))


def _random_value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 9 or roll < 0.4 or (depth > 2 and roll < 0.75):
        return rng.choice(
            [
                lambda: _random_string(rng),
                lambda: rng.choice([0, -1, 12345678901234567890, 1.5, -2.5e-10, 1e300]),
                lambda: None,
                lambda: True,
            ]
        )()
    sizes = [0, 1, 2, 3, 8] + ([17, 256, 257] if depth == 0 else [])
    if roll < 0.7:
        return [_random_value(rng, depth + 1) for _ in range(rng.choice(sizes))]
    return {_random_string(rng) + str(i): _random_value(rng, depth + 1) for i in range(rng.choice(sizes))}


def _measure(doc: bytes) -> dict[str, int]:
    numbers: list[int] = []
    strings: list[int] = []

    def number(text: str) -> int:
        numbers.append(len(text))
        return 0

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        strings.extend(len(key.encode()) for key, _ in items)
        return dict(items)

    value = json.loads(doc, parse_int=number, parse_float=number, object_pairs_hook=pairs)
    found = {"max_depth": 0, "max_items": 1}

    def walk(node: Any, depth: int) -> None:
        if isinstance(node, (list, dict)):
            container = cast("dict[str, Any] | list[Any]", node)
            children = list(container.values()) if isinstance(container, dict) else container
            found["max_depth"] = max(found["max_depth"], depth + 1)
            found["max_items"] = max(found["max_items"], len(children))
            for child in children:
                walk(child, depth + 1)
        elif isinstance(node, str):
            strings.append(len(node.encode()))

    walk(value, 0)
    found["max_string_bytes"] = max(strings, default=0)
    found["max_number_chars"] = max(numbers, default=1)
    return found


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_reference_measurement(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(120):
        doc = json.dumps(
            _random_value(rng, 0), ensure_ascii=rng.random() < 0.3, indent=rng.choice([None, 1])
        ).encode()
        measured = _measure(doc)
        chosen = {name: max(value + rng.choice([-1, 0, 0, 1, 7]), 0) for name, value in measured.items()}
        chosen["max_items"] = max(chosen["max_items"], 1)
        chosen["max_number_chars"] = max(chosen["max_number_chars"], 1)
        lim = JsonLimits(max_bytes=len(doc) + rng.choice([0, 0, 50]), **cast("dict[str, Any]", chosen))
        over = [name for name, value in measured.items() if value > getattr(lim, name)]
        if over:
            with pytest.raises(JsonLimitError) as info:
                bj.validate(doc, lim)
            assert info.value.limit in over
            if info.value.limit != "max_depth":  # depth reports the first level past the limit
                assert info.value.actual == measured[info.value.limit]
        else:
            bj.validate(doc, lim)


# --- recorded provider traffic ---------------------------------------------------------------


def _recorded_bodies() -> list[bytes]:
    try:
        from tests.support.cassettes import cassette_root
        from tests.support.cassettes import iter_interactions
    except ImportError:  # pyyaml is a workspace test dependency, not one of ferrule-core's
        return []
    if cassette_root() is None:
        return []
    bodies: list[bytes] = []
    for interaction in iter_interactions("models"):
        if interaction.is_stream and interaction.response_text:
            for line in interaction.response_text.splitlines():
                payload = line[len("data:") :].strip() if line.startswith("data:") else ""
                if payload.startswith(("{", "[")):
                    bodies.append(payload.encode())
        elif interaction.response_json is not None:
            bodies.append(interaction.response_bytes)
    # Distinct bodies: a few of the largest (they exercise the scan most) and many small ones.
    ordered = [body for body in sorted(set(bodies), key=len, reverse=True) if len(body) <= 512 * 1024]
    return ordered[:4] + [body for body in ordered[4:] if len(body) < 64 * 1024][:250]


RECORDED = _recorded_bodies()


@pytest.mark.skipif(
    not RECORDED, reason="recorded provider traffic (../shared/cassettes) or pyyaml not available"
)
def test_recorded_responses_at_and_past_their_own_limits() -> None:
    for body in RECORDED:
        assert bj.decode_value(body, bj.PROVIDER_RESPONSE) == json.loads(body)
        measured = _measure(body)
        exact = JsonLimits(
            max_bytes=len(body), **cast("dict[str, Any]", {k: max(v, 1) for k, v in measured.items()})
        )
        bj.validate(body, exact)
        for name, value in measured.items():
            if value > 1:
                tighter = msgspec.structs.replace(exact, **{name: value - 1})
                with pytest.raises(JsonLimitError) as info:
                    bj.validate(body, tighter)
                assert info.value.limit == name


# --- ProviderDecoder --------------------------------------------------------------------------


class _Chunk(msgspec.Struct):
    id: Any = None
    items: list[Any] | None = None


@pytest.mark.parametrize(
    ("doc", "lim"),
    [
        ('{"id": "x", "items": [[[1]]]}', limits(max_depth=4)),  # depth 4: at the limit
        ('{"id": "x", "items": [[[[1]]]]}', limits(max_depth=4)),  # one past
        ('{"id": "abcd"}', limits(max_string_bytes=4)),
        ('{"id": "abcde"}', limits(max_string_bytes=4)),
        ('{"items": [1, 2, 3]}', limits(max_items=3)),
        ('{"items": [1, 2, 3, 4]}', limits(max_items=3)),
        ('{"id": 12345}', limits(max_number_chars=5)),
        ('{"id": 123456}', limits(max_number_chars=5)),
        ('{"id": "x"}', limits(max_bytes=11)),
        ('{"id": "xy"}', limits(max_bytes=11)),
        ('{"id": "x", "items": 3}', WIDE),  # the wrong type
        ('{"id": "x"', WIDE),  # malformed
        # Small enough to be decoded before any check (at most twice max_depth bytes, ...): a
        # document msgspec refuses still fails with what the checks find first.
        ("[" * 20, limits(max_depth=16)),  # unclosed, deeper than the limit
        ('{"items": ' + "[" * 10, limits(max_depth=16)),  # unclosed, within it
        ('{"items": [[[[[[[[1]]]]]]]]}', limits(max_depth=16)),  # well-formed, depth 9
        ('{"id": "x", "items": {"a": 1}}', limits(max_depth=16)),  # the wrong type
        ('{"id": "caf\u00e9", "items": [1]}', limits(max_depth=16)),
        ('{"id": "café"}', limits(max_depth=16)),  # not ASCII: checked first
        ('{"id": "x"} 1', limits(max_depth=16)),  # trailing data
    ],
)
def test_provider_decoder_is_decode_provider_json(doc: str, lim: JsonLimits) -> None:
    # Built once and reused, it checks the same limits and fails with the same error.
    decoder = bj.ProviderDecoder(_Chunk, lim, "a test chunk")

    def outcome(decode: Any) -> tuple[str, Any]:
        try:
            return "ok", decode()
        except ResponseDecodeError as exc:
            return "error", (str(exc), exc.provider_name, exc.model_name)

    expected = outcome(
        lambda: bj.decode_provider_json(doc, _Chunk, lim, "a test chunk", provider_name="p", model_name="m")
    )
    assert outcome(lambda: decoder.decode(doc, provider_name="p", model_name="m")) == expected
    assert outcome(lambda: decoder.decode(doc.encode(), provider_name="p", model_name="m")) == expected
    if expected[0] == "error":
        assert "p:m: a test chunk is not valid: " in expected[1][0]
    else:
        assert decoder.decode(doc.encode()) == expected[1]


def test_provider_decoder_limits_at_and_one_past() -> None:
    lim = limits(max_depth=4)
    decoder = bj.ProviderDecoder(_Chunk, lim, "a test chunk")
    assert decoder.decode('{"items": [[[1]]]}').items == [[[1]]]
    with pytest.raises(ResponseDecodeError, match="max_depth"):
        decoder.decode('{"items": [[[[1]]]]}')


@pytest.mark.parametrize(
    ("doc", "lim"),
    [
        # Longer than twice max_depth: within the limits when it has no more brackets than max_depth.
        ('{"id": "' + "x" * 60 + '", "items": [[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]}', limits(max_depth=16)),
        ('{"id": "' + "x" * 60 + '", "items": [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}', limits(max_depth=16)),
        # More brackets than max_depth but shallow (in a string): the scan decides.
        ('{"id": "' + "[" * 40 + '", "items": [1]}', limits(max_depth=16)),
        ('{"id": "' + "{" * 40 + '", "items": [[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}', limits(max_depth=16)),
        # Not ASCII, up to a quarter of the bounds in characters (four bytes each at most).
        ('{"id": "' + "é" * 30 + '"}', limits(max_depth=16, max_string_bytes=60)),
        ('{"id": "' + "é" * 30 + '"}', limits(max_depth=16, max_string_bytes=59)),
        ('{"id": "' + "😀" * 30 + '"}', limits(max_depth=16, max_string_bytes=120)),
        ('{"id": "' + "😀" * 30 + '"}', limits(max_depth=16, max_string_bytes=119)),
        ('{"items": [' + "1," * 200 + "1]}", limits(max_depth=16, max_items=201)),
        ('{"items": [' + "1," * 200 + "1]}", limits(max_depth=16, max_items=200)),
    ],
)
def test_provider_decoder_past_twice_max_depth_is_decode_provider_json(doc: str, lim: JsonLimits) -> None:
    test_provider_decoder_is_decode_provider_json(doc, lim)


def test_provider_decoder_refuses_a_lone_surrogate_as_decode_provider_json_does() -> None:
    decoder = bj.ProviderDecoder(_Chunk, limits(max_depth=16), "a test chunk")
    with pytest.raises(ResponseDecodeError, match="lone surrogate"):
        decoder.decode('{"id": "\ud800"}')
    with pytest.raises(ResponseDecodeError, match="lone surrogate"):
        bj.decode_provider_json('{"id": "\ud800"}', _Chunk, limits(max_depth=16), "a test chunk")


# --- FastPathDecoder --------------------------------------------------------------------------


class _Text(msgspec.Struct):
    text: str
    kind: None = None


class _Any(msgspec.Struct):
    v: Any


def test_fast_path_decoder_decodes_only_what_fits() -> None:
    decoder = bj.FastPathDecoder(_Text, limits(max_depth=8))
    assert decoder.decode('{"text": "a", "other": [1, {"b": 2}]}') == _Text("a")
    assert decoder.decode(b'{"text": "\xc3\xa9"}') == _Text("é")
    assert decoder.decode('{"text": "é"}') == _Text("é")
    for misfit in (
        '{"text": 1}',  # strict: no conversion
        '{"text": "a", "kind": "x"}',
        '{"other": 1}',
        '{"text": "a"',
        '{"text": "a"} 1',
        b'{"text": "\xff"}',
        '{"text": "\ud800"}',
        "",
    ):
        assert decoder.decode(misfit) is None
    assert decoder.decode(bytearray(b'{"text": "a"}')) is None  # another buffer: the full path's
    assert decoder.decode(memoryview(b'{"text": "a"}')) is None


@pytest.mark.parametrize(
    ("limit", "at", "past"),
    [
        ("max_depth", '{"text": "a", "o": [[[1]]]}', '{"text": "a", "o": [[[[1]]]]}'),
        ("max_string_bytes", '{"text": "abcd"}', '{"text": "abcde"}'),
        ("max_items", '{"text": "a", "o": [1, 2, 3]}', '{"text": "a", "o": [1, 2, 3, 4]}'),
        ("max_number_chars", '{"text": "a", "o": 1234}', '{"text": "a", "o": 12345}'),
        ("max_bytes", '{"text": "abcdefghijklmnopq"}', '{"text": "abcdefghijklmnopqr"}'),
    ],
)
def test_fast_path_decoder_never_decodes_past_a_limit(limit: str, at: str, past: str) -> None:
    bound = {"max_depth": 4, "max_string_bytes": 4, "max_items": 3, "max_number_chars": 4, "max_bytes": 29}
    lim = limits(**{limit: bound[limit]})
    bj.validate(at, lim)
    with pytest.raises(JsonLimitError) as info:
        bj.validate(past, lim)
    assert info.value.limit == limit
    assert bj.FastPathDecoder(_Text, lim).decode(past) is None
    fast = bj.FastPathDecoder(_Text, lim).decode(at)
    # At the limit: decoded when provably within (a document it cannot prove within goes on).
    assert fast is not None or len(at) > 2 * 4


def _outcome(decode: Any, data: bytes | str) -> tuple[bool, Any]:
    try:
        return True, decode(data).v
    except ResponseDecodeError as exc:
        return False, str(exc)


@pytest.mark.parametrize("seed", range(4))
def test_fast_paths_decode_only_documents_within_every_limit(seed: int) -> None:
    # Random documents against limits around their own measurements: whatever a fast path
    # decodes, the scan accepts, with the same value; the full decoder agrees with the function.
    rng = random.Random(seed)
    decoded = refused = 0
    for _ in range(150):
        value = {"v": _random_value(rng, 0)}
        text = json.dumps(value, ensure_ascii=rng.random() < 0.3, indent=rng.choice([None, 1]))
        doc = text.encode()
        measured = _measure(doc)
        # Each limit near its measurement or loose (when all are, the fast paths may decode).
        loose = rng.random() < 0.4
        chosen = {
            name: max(count + rng.choice([-1, 0, 0, 1, 7]), 1)
            if not loose or rng.random() < 0.3
            else (bj.MAX_SUPPORTED_DEPTH if name == "max_depth" else 1 << 20)
            for name, count in measured.items()
        }
        lim = JsonLimits(max_bytes=len(doc) + rng.choice([-1, 0, 0, 50]), **cast("dict[str, Any]", chosen))
        within = bj.is_valid(doc, lim)
        for data in (doc, text):
            fast = bj.FastPathDecoder(_Any, lim).decode(data)
            if fast is not None:
                assert within
                assert fast.v == value["v"]
                decoded += 1

            full = _outcome(bj.ProviderDecoder(_Any, lim, "a test document").decode, data)
            assert full == _outcome(
                functools.partial(bj.decode_provider_json, type=_Any, limits=lim, what="a test document"),
                data,
            )
            assert full[0] == within
            if within:
                assert full[1] == value["v"]
            refused += not within
    # Both outcomes were exercised.
    assert decoded
    assert refused


def test_fast_path_decoder_decode_each_is_decode_of_each() -> None:
    # Proved by size at most 32 characters (twice `max_depth`), 30 as any text (a quarter of 120
    # bytes); past them each document is proved one by one.
    decoder = bj.FastPathDecoder(_Text, limits(max_depth=16, max_bytes=120))
    fit = ['{"text": "a"}', '{"text": "é"}', '{"text": "b", "o": [1]}']
    misfits = ['{"text": 1}', '{"text": "a"', "", '{"text": "\ud800"}', '{"o": [[[[[[[1]]]]]]]}']
    for datas in (
        [],
        fit,
        [*fit, *misfits],
        [misfits[0], *fit, misfits[1], *fit, misfits[2]],
        ['{"text": "' + "x" * 40 + '"}', *fit],  # too long to prove by size
        [*fit, '{"text": "' + "x" * 20 + '"}'],  # 32 characters, all ASCII
        [*fit, '{"text": "' + "é" * 20 + '"}'],  # 32 characters, not all ASCII
        misfits,
        # Longer than twice `max_depth`: proved within it by the most `{` plus the most `[` of
        # any document (here 1 + 1, 8 + 8, then 8 + 9, over the limit of 16).
        ['{"text": "' + "x" * 40 + '", "o": [1]}', *fit],
        ['{"text": "a", "o": [[[[[[[[{}, {}, {}, {}, {}, {}, {}]]]]]]]]}', *fit],
        ['{"text": "a", "o": [[[[[[[[[{}, {}, {}, {}, {}, {}, {}]]]]]]]]]}', *fit],
    ):
        assert decoder.decode_each(datas) == [decoder.decode(data) for data in datas], datas


def _counting_decoder() -> tuple[bj.FastPathDecoder[_Text], list[str]]:
    """A fast-path decoder (`max_depth=16`, `max_bytes=120`) and the documents it decoded one by one."""
    decoded_alone: list[str] = []

    class Counting(bj.FastPathDecoder[_Text]):
        def decode(self, data: bj.JsonInput) -> _Text | None:
            decoded_alone.append(cast("str", data))
            return super().decode(data)

    return Counting(_Text, limits(max_depth=16, max_bytes=120)), decoded_alone


def test_fast_path_decoder_decode_each_proves_long_documents_at_once_when_their_openers_are_few() -> None:
    decoder, decoded_alone = _counting_decoder()
    long = ['{"text": "' + "x" * 40 + f'", "o": [{n}]}}' for n in range(3)]
    assert [text.text for text in cast("list[_Text]", decoder.decode_each(long))] == ["x" * 40] * 3
    assert decoded_alone == []
    deep = '{"text": "a", "o": [[[[[[[[[{}, {}, {}, {}, {}, {}, {}]]]]]]]]]}'
    assert decoder.decode_each([*long, deep]) == [*decoder.decode_each(long), decoder.decode(deep)]
    assert decoded_alone[:4] == [*long, deep]  # one by one: the bound does not prove them


def test_fast_path_decoder_decode_each_counts_the_openers_of_the_long_documents_only() -> None:
    # A read of short deltas with one long event (a Chat stream's usage chunk): the short ones are
    # within `max_depth` by their size, however many brackets they hold, so only the long one's
    # are counted, and the read is still decoded at once.
    decoder, decoded_alone = _counting_decoder()
    short = '{"o": ' + "[" * 12 + "1" + "]" * 12 + "}"  # 32 characters, 12 `[`
    long = '{"text": "' + "x" * 40 + '", "o": {"a": {"b": {"c": {}}}}}'  # 5 `{`, no `[`
    assert len(short) == 32 < len(long)
    datas = [short, short, long]
    assert decoder.decode_each(datas) == [None, None, _Text("x" * 40)]
    assert decoded_alone == []
    # A long document with as many openers as the short ones' would be over the bound: one by one.
    deep = '{"text": "a", "o": ' + "[" * 12 + "{}" + "]" * 12 + ', "p": {"q": {"r": {}}}}'
    assert decoder.decode_each([short, deep]) == [decoder.decode(short), decoder.decode(deep)]
    assert decoded_alone[:2] == [short, deep]


def test_fast_path_decoder_decode_each_decodes_only_the_documents_too_long_for_the_size_proof_alone() -> None:
    # A Responses stream's first and last events repeat the whole response: longer than the size
    # proof's bound, where its deltas are well within it. Only those go through `decode`.
    decoder, decoded_alone = _counting_decoder()
    short = [f'{{"text": "{n}"}}' for n in range(4)]
    over = '{"text": "' + "x" * 130 + '"}'  # over max_bytes: the full decoder's to refuse
    datas = [over, *short[:2], over, over, *short[2:], over]
    assert decoder.decode_each(datas) == [None, *map(_Text, "01"), None, None, *map(_Text, "23"), None]
    assert decoded_alone == [over] * 4
    decoded_alone.clear()
    assert decoder.decode_each(datas) == [decoder.decode(data) for data in datas]
