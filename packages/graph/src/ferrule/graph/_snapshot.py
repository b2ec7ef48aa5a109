"""Snapshots: the definition fingerprint, payload codecs, and the strict versioned envelope."""

from __future__ import annotations

import hashlib
import json
import types
import typing
from collections.abc import Callable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import Generic
from typing import Protocol
from typing import cast

import msgspec
from typing_extensions import TypeVar

from ferrule.core import bounded_json

from ._errors import SnapshotDefinitionError
from ._errors import SnapshotError
from ._errors import SnapshotFormatError
from ._errors import SnapshotLimitError
from ._errors import SnapshotMigrationError
from ._errors import SnapshotNodeError
from ._errors import SnapshotPayloadVersionError
from ._errors import SnapshotVersionError
from ._node import KIND_NAMES
from ._node import GraphShape

if TYPE_CHECKING:
    from ._limits import GraphLimits
    from ._node import Node

__all__ = [
    "DEFINITION_FORMAT",
    "SNAPSHOT_FORMAT",
    "SNAPSHOT_VERSION",
    "JsonCodec",
    "SnapshotCodec",
    "definition_fingerprint",
    "type_name",
]

StateT = TypeVar("StateT")
ValueT = TypeVar("ValueT")

SNAPSHOT_FORMAT = "ferrule.graph.snapshot"
"""The `format` marker of a snapshot envelope."""
SNAPSHOT_VERSION = 1
"""The envelope version this release writes and reads."""
DEFINITION_FORMAT = "ferrule.graph.definition"
"""The `format` marker inside the canonical definition document that is hashed."""


class SnapshotCodec(Protocol[StateT, ValueT]):
    """Turns a run's state and value into JSON documents and back.

    Optional members, looked up by name: `migrate(state_json, value_json, old_version) ->
    {"state_json": str, "value_json": str}` to restore payloads of an older `payload_version`, and
    `dispose_state(state)` to release a decoded state when decoding the value then fails.
    """

    @property
    def payload_version(self) -> int:
        """The version of the documents this codec writes (at least 1)."""
        ...

    def encode_state(self, state: StateT, /) -> bytes | str:
        """The state as one JSON document."""
        ...

    def encode_value(self, value: ValueT, /) -> bytes | str:
        """The current value as one JSON document."""
        ...

    def decode_state(self, data: bytes, /) -> StateT:
        """The state from its document."""
        ...

    def decode_value(self, data: bytes, /) -> ValueT:
        """The value from its document."""
        ...


class JsonCodec(Generic[StateT, ValueT]):
    """A `SnapshotCodec` for msgspec-serializable types (Structs, dataclasses, builtins, ...)."""

    def __init__(
        self,
        state_type: type[StateT],
        value_type: type[ValueT],
        *,
        payload_version: int = 1,
        migrate: Callable[[str, str, int], Mapping[str, Any]] | None = None,
        dispose_state: Callable[[StateT], None] | None = None,
    ) -> None:
        if type(payload_version) is not int or payload_version < 1:
            raise ValueError(f"payload_version must be a positive int, got {payload_version!r}")
        self._payload_version = payload_version
        self._state = msgspec.json.Decoder(state_type)
        self._value = msgspec.json.Decoder(value_type)
        self._encoder = msgspec.json.Encoder()
        if migrate is not None:
            self.migrate = migrate
        if dispose_state is not None:
            self.dispose_state = dispose_state

    @property
    def payload_version(self) -> int:
        """The version of the documents this codec writes."""
        return self._payload_version

    def encode_state(self, state: StateT, /) -> bytes:
        """The state as JSON."""
        return self._encoder.encode(state)

    def encode_value(self, value: ValueT, /) -> bytes:
        """The value as JSON."""
        return self._encoder.encode(value)

    def decode_state(self, data: bytes, /) -> StateT:
        """The state from JSON."""
        return self._state.decode(data)

    def decode_value(self, data: bytes, /) -> ValueT:
        """The value from JSON."""
        return self._value.decode(data)


# --- the fingerprint ------------------------------------------------------------------------------


def type_name(tp: Any) -> str:
    """A name of a type that is the same in every process and on every supported Python version."""
    if tp is None or tp is type(None):
        return "None"
    if tp is Any:
        return "typing.Any"
    if isinstance(tp, typing.TypeVar):
        return "~" + tp.__name__
    origin = typing.get_origin(tp)
    if origin is not None:
        args = typing.get_args(tp)
        if origin is typing.Union or origin is types.UnionType:
            return " | ".join(type_name(a) for a in args)
        if origin is typing.Literal:
            return "typing.Literal[" + ", ".join(repr(a) for a in args) + "]"
        if origin is typing.Annotated:
            return type_name(args[0])
        return type_name(origin) + "[" + ", ".join(type_name(a) for a in args) + "]"
    if isinstance(tp, type):
        if tp.__module__ == "builtins":
            return tp.__qualname__
        return f"{tp.__module__}.{tp.__qualname__}"
    return repr(tp)


def _graph_types(graph: GraphShape) -> list[str]:
    declared = list(graph.types)
    orig = getattr(graph.builder, "__orig_class__", None)
    if orig is not None:
        for i, arg in enumerate(typing.get_args(orig)[:5]):
            if declared[i] is None:
                declared[i] = arg
    return [type_name(Any if tp is None else tp) for tp in declared]


def definition_fingerprint(graph: GraphShape) -> str:
    """SHA-256 (hex) of the canonical definition document."""
    nodes = graph.nodes
    limits = graph.limits
    document = [
        DEFINITION_FORMAT,
        1,
        graph.definition_id,
        _graph_types(graph),
        [graph.entry, nodes[graph.entry].name],
        [
            [
                KIND_NAMES[node.kind],
                node.name,
                node.mode if node.kind == 2 else None,
                [b.name for b in node.branches],
                [[r.branch, r.target] for r in node.route_defs],
            ]
            for node in nodes
        ],
        [[field, getattr(limits, field)] for field in sorted(limits.__struct_fields__)],
    ]
    return hashlib.sha256(msgspec.json.encode(document)).hexdigest()


# --- the envelope ---------------------------------------------------------------------------------


class _NodeRef(msgspec.Struct, forbid_unknown_fields=True):
    index: int
    name: str


class _Envelope(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    format: str
    version: int
    definition_sha256: str
    payload_version: int
    run_id: str
    next_node: _NodeRef
    completed_steps: int
    max_steps: int
    state_json: str
    value_json: str
    agent_state: str | None = None


def _payload_limits(limits: GraphLimits) -> bounded_json.JsonLimits:
    return bounded_json.JsonLimits(
        name="graph_snapshot_payload",
        max_bytes=limits.max_snapshot_payload_bytes,
        max_depth=limits.max_snapshot_depth,
        max_string_bytes=limits.max_snapshot_payload_bytes,
        max_items=limits.max_snapshot_collection_items,
        max_number_chars=1024,
    )


def _envelope_limits(limits: GraphLimits) -> bounded_json.JsonLimits:
    return bounded_json.JsonLimits(
        name="graph_snapshot",
        max_bytes=limits.max_snapshot_bytes,
        max_depth=2,
        # Payload strings are bounded again, one by one, with the payload limits.
        max_string_bytes=max(limits.max_snapshot_payload_bytes, 1024),
        max_items=64,
        max_number_chars=32,
    )


def _check_document(data: str | bytes, limits: bounded_json.JsonLimits, what: str) -> None:
    try:
        bounded_json.validate(data, limits)
    except bounded_json.JsonLimitError as exc:
        raise SnapshotLimitError(f"the snapshot's {what} exceeds its limit: {exc}") from None
    except bounded_json.JsonError as exc:
        raise SnapshotFormatError(f"the snapshot's {what} is not valid JSON: {exc}") from None


def _text(document: bytes | str, what: str) -> str:
    if isinstance(document, str):
        return document
    if isinstance(document, (bytes, bytearray)):  # pyright: ignore[reportUnnecessaryIsInstance]
        try:
            return bytes(document).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SnapshotFormatError(f"the codec's {what} document is not UTF-8: {exc}") from None
    raise SnapshotFormatError(
        f"the codec must return the {what} as JSON bytes or str, got {type(document).__name__}"
    )


def write_snapshot(
    graph: GraphShape,
    codec: SnapshotCodec[Any, Any],
    *,
    run_id: str,
    state: Any,
    value: Any,
    node: Node,
    completed_steps: int,
    max_steps: int,
    paused: Any,
) -> bytes:
    """The envelope of a settled run."""
    limits = graph.limits
    payload_limits = _payload_limits(limits)
    version = codec.payload_version
    if type(version) is not int or version < 1:
        raise SnapshotError(f"the codec's payload_version must be a positive int, got {version!r}")
    state_json = _text(codec.encode_state(state), "state")
    value_json = _text(codec.encode_value(value), "value")
    _check_document(state_json, payload_limits, "state document")
    _check_document(value_json, payload_limits, "value document")
    agent_state: str | None = None
    if paused is not None:
        encoded: str = paused.state.to_json().decode()
        _check_document(encoded, payload_limits, "agent state")
        agent_state = encoded
    data = msgspec.json.encode(
        _Envelope(
            format=SNAPSHOT_FORMAT,
            version=SNAPSHOT_VERSION,
            definition_sha256=graph.fingerprint,
            payload_version=version,
            run_id=run_id,
            next_node=_NodeRef(node.index, node.name),
            completed_steps=completed_steps,
            max_steps=max_steps,
            state_json=state_json,
            value_json=value_json,
            agent_state=agent_state,
        )
    )
    if len(data) > limits.max_snapshot_bytes:
        raise SnapshotLimitError(
            f"the snapshot is {len(data)} bytes, past max_snapshot_bytes={limits.max_snapshot_bytes}"
        )
    return data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise SnapshotFormatError(f"the snapshot has the field {key!r} twice")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise SnapshotFormatError(f"the snapshot contains {name}, which is not JSON")


class Loaded:
    """A checked envelope: everything is verified except what only the codec can decode."""

    __slots__ = (
        "completed_steps",
        "envelope",
        "graph",
        "max_steps",
        "node_index",
        "paused",
        "run_id",
    )

    def __init__(self, graph: GraphShape, envelope: _Envelope, paused: Any) -> None:
        self.graph = graph
        self.envelope = envelope
        self.node_index = envelope.next_node.index
        self.completed_steps = envelope.completed_steps
        self.max_steps = envelope.max_steps
        self.run_id = envelope.run_id
        self.paused = paused

    def decode(self, codec: SnapshotCodec[Any, Any]) -> tuple[Any, Any]:
        """Migrate if needed, then decode state and value (both or neither)."""
        envelope = self.envelope
        state_json, value_json = envelope.state_json, envelope.value_json
        if envelope.payload_version < codec.payload_version:
            state_json, value_json = _migrate(self.graph.limits, codec, state_json, value_json, envelope)
        try:
            state = codec.decode_state(state_json.encode())
        except Exception as exc:
            raise SnapshotFormatError(f"the codec could not decode the snapshot's state: {exc!r}") from exc
        try:
            value = codec.decode_value(value_json.encode())
        except Exception as exc:
            dispose = getattr(codec, "dispose_state", None)
            if dispose is not None:
                dispose(state)
            raise SnapshotFormatError(f"the codec could not decode the snapshot's value: {exc!r}") from exc
        return state, value


def _migrate(
    limits: GraphLimits, codec: SnapshotCodec[Any, Any], state_json: str, value_json: str, envelope: _Envelope
) -> tuple[str, str]:
    migrate = getattr(codec, "migrate", None)
    assert migrate is not None  # read_snapshot refused older payloads without one
    try:
        migrated = migrate(state_json, value_json, envelope.payload_version)
    except Exception as exc:
        raise SnapshotMigrationError(
            f"migrating the payload from version {envelope.payload_version} failed: {exc!r}"
        ) from exc
    if (
        not isinstance(migrated, Mapping)
        or set(migrated) != {"state_json", "value_json"}  # pyright: ignore[reportUnknownArgumentType]
        or not isinstance(migrated["state_json"], str)
        or not isinstance(migrated["value_json"], str)
    ):
        raise SnapshotMigrationError(
            'a migration must return exactly {"state_json": str, "value_json": str}, got '
            + repr(cast("object", migrated))[:200]
        )
    new_state: str = migrated["state_json"]
    new_value: str = migrated["value_json"]
    payload_limits = _payload_limits(limits)
    _check_document(new_state, payload_limits, "migrated state document")
    _check_document(new_value, payload_limits, "migrated value document")
    return new_state, new_value


def read_snapshot(graph: GraphShape, source: bytes | str, codec: SnapshotCodec[Any, Any]) -> Loaded:
    """Check an envelope against the graph and the codec's version; no codec method is called."""
    envelope = _decode_envelope(_parse_fields(source, graph.limits))
    _check_against_graph(envelope, graph)
    _check_payload_version(envelope, codec)
    payload_limits = _payload_limits(graph.limits)
    _check_document(envelope.state_json, payload_limits, "state document")
    _check_document(envelope.value_json, payload_limits, "value document")
    paused = None if envelope.agent_state is None else _agent_pause(envelope, envelope.agent_state, graph)
    return Loaded(graph, envelope, paused)


def _parse_fields(source: bytes | str, limits: GraphLimits) -> dict[str, Any]:
    """The envelope's JSON object, within the envelope limits, without duplicate keys or constants."""
    if isinstance(source, (bytearray, memoryview)):
        source = bytes(source)
    if not isinstance(source, (bytes, str)):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise SnapshotFormatError(f"a snapshot is JSON bytes or str, got {type(source).__name__}")
    _check_document(source, _envelope_limits(limits), "envelope")
    try:
        raw = json.loads(source, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, SnapshotError):
            raise
        raise SnapshotFormatError(f"the snapshot is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise SnapshotFormatError("a snapshot is a JSON object")
    return raw  # pyright: ignore[reportUnknownVariableType]


def _decode_envelope(fields: dict[str, Any]) -> _Envelope:
    """The typed envelope, after its format and version are recognised."""
    if fields.get("format") != SNAPSHOT_FORMAT:
        raise SnapshotFormatError(
            f"not a ferrule graph snapshot (format {fields.get('format')!r}, expected {SNAPSHOT_FORMAT!r})"
        )
    version = fields.get("version")
    if type(version) is not int:
        raise SnapshotFormatError(f"the snapshot's version must be an int, got {version!r}")
    if version > SNAPSHOT_VERSION:
        raise SnapshotVersionError(
            f"the snapshot has envelope version {version}; this ferrule-graph reads up to version "
            f"{SNAPSHOT_VERSION}: resume it with a newer ferrule-graph"
        )
    if version < 1:
        raise SnapshotFormatError(f"the snapshot has an invalid version {version}")
    try:
        return msgspec.convert(fields, _Envelope, strict=True)
    except msgspec.ValidationError as exc:
        raise SnapshotFormatError(f"the snapshot envelope is malformed: {exc}") from None


def _check_against_graph(envelope: _Envelope, graph: GraphShape) -> None:
    """The envelope was written by this definition, names one of its nodes and counts steps sanely."""
    if envelope.definition_sha256 != graph.fingerprint:
        raise SnapshotDefinitionError(
            "the snapshot was written by a different graph definition (definition drift): its "
            f"fingerprint {envelope.definition_sha256[:16]}... is not this graph's {graph.fingerprint[:16]}...; "
            "resume it with the graph that wrote it"
        )
    ref = envelope.next_node
    nodes = graph.nodes
    if not 0 <= ref.index < len(nodes) or nodes[ref.index].name != ref.name:
        raise SnapshotNodeError(
            f"the snapshot's next node {ref.name!r} (index {ref.index}) is not a node of this graph"
        )
    if (
        not 1 <= envelope.max_steps <= graph.limits.max_steps
        or not 0 <= envelope.completed_steps <= envelope.max_steps
    ):
        raise SnapshotFormatError(
            f"the snapshot's step counters are inconsistent (completed_steps={envelope.completed_steps}, "
            f"max_steps={envelope.max_steps})"
        )
    if not envelope.run_id:
        raise SnapshotFormatError("the snapshot's run_id is empty")


def _check_payload_version(envelope: _Envelope, codec: SnapshotCodec[Any, Any]) -> None:
    """The codec reads the payload's version, directly or through its `migrate`."""
    current = codec.payload_version
    if envelope.payload_version < 1:
        raise SnapshotFormatError(f"the snapshot's payload_version {envelope.payload_version} is invalid")
    if envelope.payload_version > current:
        raise SnapshotPayloadVersionError(
            f"the snapshot's payload version {envelope.payload_version} is newer than the codec's {current}"
        )
    if envelope.payload_version < current and getattr(codec, "migrate", None) is None:
        raise SnapshotPayloadVersionError(
            f"the snapshot's payload version {envelope.payload_version} is older than the codec's {current} "
            "and the codec has no migrate(state_json, value_json, old_version)"
        )


def _agent_pause(envelope: _Envelope, agent_state: str, graph: GraphShape) -> Any:
    """The agent pause the snapshot holds, for an agent node only."""
    ref = envelope.next_node
    if not getattr(graph.nodes[ref.index].fn, "__ferrule_agent_node__", False):
        raise SnapshotNodeError(
            f"the snapshot holds an agent pause, but node {ref.name!r} is not an agent node"
        )
    _check_document(agent_state, _payload_limits(graph.limits), "agent state")
    from ferrule.agent import Paused
    from ferrule.agent import PausedState
    from ferrule.agent.exceptions import PausedStateError

    try:
        return Paused(PausedState.from_json(agent_state))
    except PausedStateError as exc:
        raise SnapshotFormatError(f"the snapshot's agent state is invalid: {exc}") from None
