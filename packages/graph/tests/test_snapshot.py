"""Snapshots (C-01 … C-08): fingerprints, the strict envelope, every rejection before any codec call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ferrule.graph import DecisionResult
from ferrule.graph import Emitter
from ferrule.graph import Graph
from ferrule.graph import GraphBuilder
from ferrule.graph import GraphContext
from ferrule.graph import GraphEvent
from ferrule.graph import GraphLimits
from ferrule.graph import Join
from ferrule.graph import JsonCodec
from ferrule.graph import ParallelBranch
from ferrule.graph import RunOptions
from ferrule.graph import SnapshotDefinitionError
from ferrule.graph import SnapshotError
from ferrule.graph import SnapshotFormatError
from ferrule.graph import SnapshotLimitError
from ferrule.graph import SnapshotMigrationError
from ferrule.graph import SnapshotNodeError
from ferrule.graph import SnapshotPayloadVersionError
from ferrule.graph import SnapshotsDisabledError
from ferrule.graph import SnapshotStateError
from ferrule.graph import SnapshotVersionError

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent


class State(msgspec.Struct):
    log: list[str] = msgspec.field(default_factory=list[str])


Ctx = GraphContext[State, None]


def builder(definition_id: str | None = "counter-v1") -> GraphBuilder[State, None, int, int, str]:
    g = GraphBuilder[State, None, int, int, str](definition_id=definition_id)
    g.start(lambda ctx, n: n)

    def add(ctx: Ctx, n: int) -> int:
        ctx.state.log.append(f"add {n}")
        return n + 1

    g.step("add", add)
    g.decision("check", lambda ctx, n: DecisionResult("done" if n >= 5 else "again", n))
    g.end(lambda ctx, n: f"{n} after {len(ctx.state.log)} adds")
    g.entry("add")
    g.connect("add", "check")
    g.branch("check", "again", "add")
    g.branch_finish("check", "done")
    return g


class CountingCodec(JsonCodec[State, int]):
    """A JSON codec that counts its calls, so tests can prove a rejection came first."""

    def __init__(
        self,
        payload_version: int = 1,
        migrate: Callable[[str, str, int], Any] | None = None,
        dispose_state: Callable[[State], None] | None = None,
    ) -> None:
        super().__init__(
            State, int, payload_version=payload_version, migrate=migrate, dispose_state=dispose_state
        )
        self.calls: list[str] = []

    def encode_state(self, state: State, /) -> bytes:
        self.calls.append("encode_state")
        return super().encode_state(state)

    def encode_value(self, value: int, /) -> bytes:
        self.calls.append("encode_value")
        return super().encode_value(value)

    def decode_state(self, data: bytes, /) -> State:
        self.calls.append("decode_state")
        return super().decode_state(data)

    def decode_value(self, data: bytes, /) -> int:
        self.calls.append("decode_value")
        return super().decode_value(data)


async def snapshot_after(steps: int, codec: CountingCodec | None = None) -> bytes:
    graph = builder().build()
    run = await graph.iter(1, state=State())
    for _ in range(steps):
        await run.next()
    return run.snapshot(codec or CountingCodec())


async def test_snapshot_and_resume_continue_without_rerunning_nodes() -> None:
    graph = builder().build()
    uninterrupted = await graph.run(1, state=State())
    assert uninterrupted == "5 after 4 adds"
    run = await graph.iter(1, state=State())
    for _ in range(3):  # add, check, add
        await run.next()
    data = run.snapshot(CountingCodec())
    fresh = builder().build()  # a new graph object, as in another process
    events: list[GraphEvent] = []
    codec = CountingCodec()
    resumed = fresh.resume_snapshot(data, codec, options=RunOptions(event_sinks=(events.append,)))
    assert codec.calls == ["decode_state", "decode_value"]
    assert resumed.run_id == run.run_id
    assert resumed.completed_steps == 3
    assert resumed.next_node is not None
    assert resumed.next_node.name == "check"
    assert resumed.state.log == ["add 1", "add 2"]
    assert await resumed.run_to_end() == uninterrupted
    assert resumed.state.log == ["add 1", "add 2", "add 3", "add 4"]  # nothing ran twice
    assert [e.kind for e in events][:2] == ["run_resume", "step_start"]


def test_resume_in_a_fresh_process(tmp_path: Path) -> None:
    script = tmp_path / "resume.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, anyio
            sys.path.insert(0, {str(HERE)!r})
            from test_snapshot import builder, CountingCodec, State

            async def main():
                graph = builder().build()
                if sys.argv[1] == "start":
                    run = await graph.iter(1, state=State())
                    await run.next(); await run.next()
                    open(sys.argv[2], "wb").write(run.snapshot(CountingCodec()))
                else:
                    run = graph.resume_snapshot(open(sys.argv[2], "rb").read(), CountingCodec())
                    print(await run.run_to_end(), run.completed_steps, run.state.log)

            anyio.run(main)
            """
        )
    )
    path = tmp_path / "snap.json"
    for mode in ("start", "resume"):
        done = subprocess.run(
            [sys.executable, str(script), mode, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5 after 4 adds 8 ['add 1', 'add 2', 'add 3', 'add 4']"


async def test_snapshots_are_off_without_a_definition_id() -> None:
    graph = builder(definition_id=None).build()
    run = await graph.iter(1, state=State())
    with pytest.raises(SnapshotsDisabledError):
        run.snapshot(CountingCodec())
    with pytest.raises(SnapshotsDisabledError):
        graph.resume_snapshot(await snapshot_after(1), CountingCodec())


async def test_snapshot_only_when_settled_and_running() -> None:
    graph = builder().build()
    run = await graph.iter(4, state=State())
    run.snapshot(CountingCodec())  # after iter()
    await run.next()
    run.snapshot(CountingCodec())  # between next() calls
    await run.run_to_end()
    with pytest.raises(SnapshotStateError, match="reached the end"):
        run.snapshot(CountingCodec())

    async def peek(ctx: Ctx, n: int) -> int:
        with pytest.raises(SnapshotStateError, match="between nodes"):
            holder[0].snapshot(CountingCodec())
        return n

    g = GraphBuilder[State, None, int, int, int](definition_id="peek")
    g.start(lambda ctx, n: n)
    g.step("peek", peek)
    g.end(lambda ctx, n: n)
    g.entry("peek")
    g.finish("peek")
    holder: list[Any] = []
    run2 = await g.build().iter(1, state=State())
    holder.append(run2)
    await run2.next()


async def test_envelope_v1_fields() -> None:
    data = await snapshot_after(2)
    envelope = json.loads(data)
    assert list(envelope) == [
        "format",
        "version",
        "definition_sha256",
        "payload_version",
        "run_id",
        "next_node",
        "completed_steps",
        "max_steps",
        "state_json",
        "value_json",
        "agent_state",
    ]
    assert envelope["format"] == "ferrule.graph.snapshot"
    assert envelope["version"] == 1
    assert envelope["definition_sha256"] == builder().build().fingerprint
    assert envelope["next_node"] == {"index": 0, "name": "add"}
    assert envelope["completed_steps"] == 2
    assert envelope["max_steps"] == 10_000
    assert json.loads(envelope["state_json"]) == {"log": ["add 1"]}
    assert json.loads(envelope["value_json"]) == 2
    assert envelope["agent_state"] is None


async def test_max_steps_on_resume_may_narrow_to_the_completed_count_but_not_below() -> None:
    data = await snapshot_after(3)
    graph = builder().build()
    run = graph.resume_snapshot(data, CountingCodec(), options=RunOptions(max_steps=3))
    assert run.max_steps == 3
    with pytest.raises(SnapshotError, match="below the 3 steps"):
        graph.resume_snapshot(data, CountingCodec(), options=RunOptions(max_steps=2))
    with pytest.raises(Exception, match="widen"):
        graph.resume_snapshot(data, CountingCodec(), options=RunOptions(max_steps=10_001))


# --- the fingerprint (C-02) ---------------------------------------------------------------------


def test_the_fingerprint_is_stable_across_processes() -> None:
    # Type names are module-qualified, so both processes import the module the same way; hash
    # randomization differs between them.
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); from test_snapshot import builder; print(builder().build().fingerprint)"
    prints = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert len(prints) == 1
    assert len(prints.pop()) == 64


def variant(change: str) -> str:
    g = GraphBuilder[State, None, int, int, str](definition_id="counter-v1")
    if change == "types":
        g = GraphBuilder[State, None, int, float, str](definition_id="counter-v1")
    if change == "id":
        g.definition_id = "counter-v2"
    g.start(lambda ctx, n: n)
    g.step("add" if change != "name" else "plus", lambda ctx, n: n)
    if change == "kind":
        g.step("check", lambda ctx, n: n)
    else:
        g.decision("check", lambda ctx, n: DecisionResult("done", n))
    g.end(lambda ctx, n: str(n))
    first = "add" if change != "name" else "plus"
    if change == "entry":
        g.entry("check")
        g.connect(first, "check")
        g.branch("check", "again", first)
        g.branch_finish("check", "done")
    elif change == "kind":
        g.entry(first)
        g.connect(first, "check")
        g.finish("check")
    else:
        g.entry(first)
        g.connect(first, "check")
        g.branch("check", "again" if change != "branch" else "retry", first)
        g.branch_finish("check", "done")
    limits = GraphLimits(max_steps=99) if change == "limits" else None
    return g.build(limits=limits).fingerprint


@pytest.mark.parametrize("change", ["id", "types", "name", "kind", "entry", "branch", "limits"])
def test_each_part_of_the_definition_changes_the_fingerprint(change: str) -> None:
    assert variant("none") == builder().build().fingerprint
    assert variant(change) != variant("none")


def test_fan_out_mode_and_branch_names_are_in_the_fingerprint() -> None:
    def fan(mode: str, names: tuple[str, ...]) -> str:
        g = GraphBuilder[None, None, int, int, int](definition_id="f")
        g.start(lambda ctx, n: n)
        branches = [ParallelBranch[None, None, int, int](n, lambda ctx, v: v) for n in names]
        join = Join[int, int](lambda: 0, lambda a, r: a + r)

        def split(ctx: GraphContext[None, None], v: int, emit: Emitter[int]) -> None:
            emit(v)

        if mode == "map":
            g.fan_out("f", mode="map", map=split, branches=branches, join=join)
        else:
            g.fan_out("f", branches=branches, join=join)
        g.end(lambda ctx, n: n)
        g.entry("f")
        g.finish("f")
        return g.build().fingerprint

    base = fan("broadcast", ("a", "b"))
    assert fan("map", ("a", "b")) != base
    assert fan("broadcast", ("a", "c")) != base
    assert fan("broadcast", ("b", "a")) != base
    assert fan("broadcast", ("a", "b")) == base


def test_metadata_does_not_change_the_fingerprint() -> None:
    from ferrule.graph import NodeMetadata

    g = builder()
    g._defs[0].metadata = NodeMetadata(label="Add one")
    assert g.build().fingerprint == builder().build().fingerprint


# --- rejections, each before any codec call (C-05) ------------------------------------------------


def edited(data: bytes, **changes: Any) -> bytes:
    envelope = json.loads(data)
    for key, value in changes.items():
        if value is ...:
            del envelope[key]
        else:
            envelope[key] = value
    return json.dumps(envelope).encode()


async def rejected(
    data: bytes | str,
    error: type[Exception],
    match: str | None = None,
    *,
    graph: Graph[Any, Any, Any, Any, Any] | None = None,
    **codec_kw: Any,
) -> None:
    """Resuming `data` in `graph` (by default a fresh counter graph) raises `error` before the codec
    is called."""
    codec = CountingCodec(**codec_kw)
    with pytest.raises(error, match=match):
        (graph or builder().build()).resume_snapshot(data, codec)
    assert codec.calls == []


async def test_rejects_malformed_json() -> None:
    data = await snapshot_after(1)
    await rejected(data[:-1], SnapshotFormatError, "not valid JSON")
    await rejected(b"[1, 2]", SnapshotFormatError, "JSON object")
    await rejected(
        data.replace(b'"completed_steps":1', b'"completed_steps":NaN'), SnapshotFormatError, "JSON"
    )


async def test_rejects_unknown_and_missing_fields() -> None:
    data = await snapshot_after(1)
    await rejected(edited(data, extra=1), SnapshotFormatError, "unknown field")
    await rejected(edited(data, max_steps=...), SnapshotFormatError, "max_steps")
    await rejected(edited(data, completed_steps="1"), SnapshotFormatError, "Expected `int`")


async def test_rejects_duplicate_fields() -> None:
    data = await snapshot_after(1)
    doubled = data[:-1] + b',"completed_steps":0}'
    await rejected(doubled, SnapshotFormatError, "'completed_steps' twice")


async def test_rejects_a_foreign_format() -> None:
    data = await snapshot_after(1)
    await rejected(
        edited(data, format="ferrule.paused_run"), SnapshotFormatError, "not a ferrule graph snapshot"
    )


async def test_rejects_a_future_envelope_version() -> None:
    data = await snapshot_after(1)
    await rejected(edited(data, version=2, new_field=True), SnapshotVersionError, "version 2")
    await rejected(edited(data, version=0), SnapshotFormatError, "invalid version")


async def test_rejects_definition_drift() -> None:
    data = await snapshot_after(1)
    await rejected(edited(data, definition_sha256="0" * 64), SnapshotDefinitionError, "definition drift")
    await rejected(data, SnapshotDefinitionError, graph=builder(definition_id="counter-v2").build())


async def test_rejects_node_index_or_name_mismatch() -> None:
    data = await snapshot_after(1)
    await rejected(edited(data, next_node={"index": 0, "name": "check"}), SnapshotNodeError, "not a node")
    await rejected(edited(data, next_node={"index": 7, "name": "check"}), SnapshotNodeError, "index 7")
    await rejected(
        edited(data, next_node={"index": 1, "name": "check", "x": 1}), SnapshotFormatError, "unknown"
    )


async def test_rejects_inconsistent_counters() -> None:
    data = await snapshot_after(1)
    await rejected(edited(data, completed_steps=-1), SnapshotFormatError, "step counters")
    await rejected(edited(data, completed_steps=11, max_steps=10), SnapshotFormatError, "step counters")


async def test_rejects_future_payload_versions_and_old_ones_without_migration() -> None:
    data = await snapshot_after(1)
    await rejected(edited(data, payload_version=2), SnapshotPayloadVersionError, "newer than the codec's 1")
    await rejected(data, SnapshotPayloadVersionError, "no migrate", payload_version=2)


async def test_rejects_an_agent_state_on_a_node_that_is_not_an_agent_node() -> None:
    data = await snapshot_after(1)
    await rejected(edited(data, agent_state="{}"), SnapshotNodeError, "not an agent node")


async def test_snapshot_byte_limit_exact_and_one_past() -> None:
    data = await snapshot_after(1)
    size = len(data)
    graph_ok = builder().build(limits=GraphLimits(max_snapshot_bytes=size))
    graph_ok.resume_snapshot(edited_fingerprint(data, graph_ok.fingerprint), CountingCodec())
    tight = builder().build(limits=GraphLimits(max_snapshot_bytes=size - 1))
    await rejected(edited_fingerprint(data, tight.fingerprint), SnapshotLimitError, "max_bytes", graph=tight)


def edited_fingerprint(data: bytes, fingerprint: str) -> bytes:
    # Limits are part of the definition; re-bind the snapshot so only the size is under test.
    envelope = json.loads(data)
    old = envelope["definition_sha256"]
    return data.replace(old.encode(), fingerprint.encode())


async def payload_graph(state_json: str, **limits: int) -> tuple[Any, bytes]:
    graph = builder().build(limits=GraphLimits(**limits))
    data = await snapshot_after(1)
    envelope = json.loads(data)
    envelope["definition_sha256"] = graph.fingerprint
    envelope["state_json"] = state_json
    return graph, json.dumps(envelope).encode()


@pytest.mark.parametrize(
    ("limit", "ok", "past"),
    [
        ("max_snapshot_payload_bytes", '{"log":["aaaa"]}', '{"log":["aaaaa"]}'),
        ("max_snapshot_depth", '{"log":[]}', '{"log":[[]]}'),
        ("max_snapshot_collection_items", '{"log":["a","b"]}', '{"log":["a","b","c"]}'),
    ],
)
async def test_payload_limits_exact_and_one_past(limit: str, ok: str, past: str) -> None:
    # {"log": []} nests two levels deep, {"log": [[]]} three.
    value = {
        "max_snapshot_payload_bytes": len(ok),
        "max_snapshot_depth": 2,
        "max_snapshot_collection_items": 2,
    }[limit]
    graph, data = await payload_graph(ok, **{limit: value})
    graph.resume_snapshot(data, CountingCodec())
    graph, data = await payload_graph(past, **{limit: value})
    await rejected(data, SnapshotLimitError, graph=graph)


async def test_a_payload_that_is_not_json_is_refused_before_decoding() -> None:
    data = await snapshot_after(1)
    await rejected(edited(data, value_json="{not json"), SnapshotFormatError, "value document")


# --- codecs and migration (C-06, C-07) ----------------------------------------------------------


async def test_migration_from_an_older_payload_version() -> None:
    data = await snapshot_after(3)  # written at payload version 1
    seen: list[tuple[str, str, int]] = []

    def migrate(state_json: str, value_json: str, old: int) -> dict[str, str]:
        seen.append((state_json, value_json, old))
        state = json.loads(state_json)
        state["log"] = [*state["log"], "migrated"]
        return {"state_json": json.dumps(state), "value_json": value_json}

    codec = CountingCodec(payload_version=2, migrate=migrate)
    run = builder().build().resume_snapshot(data, codec)
    assert seen == [('{"log":["add 1","add 2"]}', "3", 1)]
    assert run.state.log == ["add 1", "add 2", "migrated"]
    assert codec.calls == ["decode_state", "decode_value"]


@pytest.mark.parametrize(
    "result",
    [
        {"state_json": "{}"},
        {"state_json": "{}", "value_json": "1", "extra": "x"},
        {"state_json": {}, "value_json": "1"},
        ["state_json", "value_json"],
    ],
)
async def test_a_migration_must_return_exactly_two_json_strings(result: Any) -> None:
    data = await snapshot_after(1)
    codec = CountingCodec(payload_version=2, migrate=lambda s, v, old: result)
    with pytest.raises(SnapshotMigrationError, match="exactly"):
        builder().build().resume_snapshot(data, codec)
    assert codec.calls == []


async def test_migrated_documents_are_validated_before_decoding() -> None:
    data = await snapshot_after(1)
    codec = CountingCodec(
        payload_version=2, migrate=lambda s, v, old: {"state_json": "{oops", "value_json": v}
    )
    with pytest.raises(SnapshotFormatError, match="migrated state"):
        builder().build().resume_snapshot(data, codec)
    assert codec.calls == []
    failing = CountingCodec(payload_version=2, migrate=lambda s, v, old: 1 / 0)
    with pytest.raises(SnapshotMigrationError, match="ZeroDivisionError"):
        builder().build().resume_snapshot(data, failing)


async def test_decoding_is_atomic_and_disposes_the_state_when_the_value_fails() -> None:
    data = await snapshot_after(1)
    disposed: list[State] = []
    codec = CountingCodec(dispose_state=disposed.append)
    bad = edited(data, value_json='"not an int"')
    with pytest.raises(SnapshotFormatError, match="value"):
        builder().build().resume_snapshot(bad, codec)
    assert codec.calls == ["decode_state", "decode_value"]
    assert len(disposed) == 1
    assert disposed[0].log == ["add 1"]


async def test_a_codec_must_produce_json() -> None:
    class Broken(CountingCodec):
        def encode_value(self, value: int, /) -> bytes:
            return b"{nope"

    graph = builder().build()
    run = await graph.iter(1, state=State())
    with pytest.raises(SnapshotFormatError, match="value document"):
        run.snapshot(Broken())
