"""Deferred tool calls: the paused state, its JSON envelope with optional HMAC, and decisions."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import Literal
from typing import TypeAlias
from typing import cast

import msgspec

from ferrule.core import bounded_json
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ToolCallPart
from ferrule.core.usage import RunUsage

from ._errors import AgentRunError
from ._errors import DecisionError
from ._errors import ModelRetry
from ._errors import PausedStateEncodeError
from ._errors import PausedStateError
from ._errors import PausedStateIntegrityError
from ._errors import PausedStateVersionError
from ._receipts import ActionReceipt

__all__ = [
    "PAUSED_STATE_FORMAT",
    "PAUSED_STATE_VERSION",
    "Approved",
    "Decision",
    "DeferredCall",
    "DeferredToolRequests",
    "DeferredToolResults",
    "Denied",
    "ExternalResult",
    "PauseRequiredError",
    "Paused",
    "PausedState",
    "ResumeDecisions",
    "ToolApproved",
    "ToolDenied",
    "deferred_requests",
]

PAUSED_STATE_FORMAT = "ferrule.paused_run"
"""The `format` marker of a serialized paused state."""
PAUSED_STATE_VERSION = 1
"""The paused-state format version this release writes and reads."""
DECISIONS_FORMAT = "ferrule.resume_decisions"
"""The `format` marker of serialized resume decisions."""


class DeferredCall(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call waiting for a decision: an approval, or the result of an external tool."""

    tool_call_id: str
    """The call's ID; decisions are keyed by it."""
    tool_name: str
    """The tool the model called."""
    args: dict[str, Any] = msgspec.field(default_factory=dict)  # pyright: ignore[reportUnknownVariableType]
    """The arguments the model sent, always as a JSON object (decoded when the model sent JSON text)."""
    kind: Literal["approval", "external"] = "approval"
    """`approval`: decide with `Approved`/`Denied`; `external`: supply an `ExternalResult` (or `Denied`)."""


def checked_integrity_key(key: object) -> bytes | None:
    """`key` when it is `None` or bytes; anything else is refused before it reaches hmac.

    The message names only the key's type, never its value (the key is a secret).
    """
    if key is None or isinstance(key, (bytes, bytearray)):
        return cast("bytes | None", key)
    hint = " (encode it, e.g. `key.encode()`)" if isinstance(key, str) else ""
    raise UserError(f"integrity_key must be bytes, got {type(key).__name__}{hint}")


# hmac (and hashlib, OpenSSL's digests) load with the first signed state, not with the agent.
def _mac(key: bytes, body: bytes) -> str:
    """The hex HMAC-SHA256 of `body` under `key`."""
    import hashlib
    import hmac

    return hmac.new(key, body, hashlib.sha256).hexdigest()


def _mac_matches(key: bytes, body: bytes, mac: str) -> bool:
    """Whether `mac` is the HMAC-SHA256 of `body` under `key` (compared in constant time)."""
    import hmac

    return hmac.compare_digest(_mac(key, body), mac)


class PausedState(msgspec.Struct, kw_only=True):
    """Everything needed to resume a paused run, possibly in another process."""

    run_id: str
    """The run's identifier."""
    state_id: str
    """A fresh identifier of this pause (record it to refuse resuming the same pause twice)."""
    created_at: datetime
    """When the run paused (UTC)."""
    messages: list[Message]
    """The canonical history, ending with the response whose calls wait for decisions."""
    new_message_index: int
    """Index of the first message added by the paused run."""
    instructions: str | None
    """The instructions resolved when the run started; resume keeps them."""
    usage: RunUsage
    """Usage up to the pause."""
    tool_retries: dict[str, int]
    """Retries used per tool."""
    output_retries: int
    """Output retries used."""
    pending: list[DeferredCall]
    """The calls that need a decision, in call order.

    Not trusted on resume: which calls need a decision is derived again from the tools, and a
    state whose `pending` leaves one out is refused."""
    immediate_call_ids: list[str]
    """Calls of the same response that run without a decision when the run resumes."""
    tool_fingerprint: str
    """Digest of the definitions of the tools this response called; resume refuses a different catalog."""
    model: str | None = None
    """`provider:model` of the model the run used (informational)."""
    capabilities: list[str] = msgspec.field(default_factory=list)  # pyright: ignore[reportUnknownVariableType]
    """IDs of capabilities loaded on demand and active at the pause; resume reactivates them."""
    queued_messages: list[Message] = msgspec.field(default_factory=list)  # pyright: ignore[reportUnknownVariableType]
    """Messages accepted from a `PendingMessageQueue` that had not entered history; resume adds them."""
    catalog_fingerprint: str | None = None
    """Digest of every tool the run offered at the pause (`checkpoint_binding="catalog"`); when set,
    resume refuses an agent whose catalog differs in any tool."""

    def to_json(self, *, integrity_key: bytes | None = None) -> bytes:
        """The versioned JSON envelope; with `integrity_key` it carries an HMAC-SHA256 of the state.

        The history inside is ferrule's versioned history document (`ferrule.core.history.dumps`),
        so files in tool results and ferrule-only fields survive the round trip.
        """
        key = checked_integrity_key(integrity_key)
        from ferrule.core import history  # loaded with the first paused state, not with the agent

        fields = {
            name: getattr(self, name)
            for name in self.__struct_fields__
            if name not in ("messages", "queued_messages")
        }
        try:
            queued = msgspec.Raw(history.dumps(self.queued_messages) if self.queued_messages else b"null")
            body = msgspec.json.encode(
                _StateWire(messages=msgspec.Raw(history.dumps(self.messages)), queued=queued, **fields)
            )
        except (TypeError, msgspec.EncodeError) as exc:  # msgspec names only the type: no secret
            raise PausedStateEncodeError(_unencodable_message(self, exc)) from exc
        mac = _mac(key, body) if key is not None else None
        head = msgspec.json.encode(
            {"format": PAUSED_STATE_FORMAT, "version": PAUSED_STATE_VERSION, "mac": mac}
        )
        return head[:-1] + b',"state":' + body + b"}"

    @classmethod
    def from_json(cls, data: bytes | str, *, integrity_key: bytes | None = None) -> PausedState:
        """Read a state written by `to_json`, rejecting malformed, future-version or tampered input.

        With `integrity_key`, the state must carry a matching HMAC; without it, a signed state is
        refused too (pass the key it was signed with).
        """
        integrity_key = checked_integrity_key(integrity_key)
        try:
            envelope = bounded_json.decode(data, type=_Envelope, limits=bounded_json.PAUSED_STATE)
        except bounded_json.JsonError as exc:
            raise PausedStateError(f"the paused state is not a valid state document: {exc}") from exc
        if envelope.format != PAUSED_STATE_FORMAT:
            raise PausedStateError(
                f"not a ferrule paused state (format {envelope.format!r}, expected {PAUSED_STATE_FORMAT!r})"
            )
        if envelope.version > PAUSED_STATE_VERSION:
            raise PausedStateVersionError(
                f"the paused state has format version {envelope.version}; this ferrule-agent reads up to "
                f"version {PAUSED_STATE_VERSION}: resume it with a newer ferrule-agent"
            )
        if envelope.version < 1:
            raise PausedStateError(f"the paused state has an invalid version {envelope.version}")
        raw = bytes(envelope.state)
        if integrity_key is not None:
            if envelope.mac is None:
                raise PausedStateIntegrityError(
                    "the paused state is not signed, but an integrity key was given; refusing it"
                )
            if not _mac_matches(integrity_key, raw, envelope.mac):
                raise PausedStateIntegrityError(
                    "the paused state failed its integrity check: it was modified or signed with another key"
                )
        elif envelope.mac is not None:
            raise PausedStateIntegrityError(
                "the paused state is signed; pass the integrity_key it was signed with to accept it"
            )
        from ferrule.core import history

        try:
            wire = msgspec.json.decode(raw, type=_StateWire)
            messages = history.loads(bytes(wire.messages))
            raw_queued = bytes(wire.queued)
            queued = history.loads(raw_queued) if raw_queued != b"null" else []
        except (msgspec.ValidationError, msgspec.DecodeError, history.HistoryError) as exc:
            raise PausedStateError(f"the paused state is malformed: {exc}") from exc
        fields = {
            name: getattr(wire, name) for name in wire.__struct_fields__ if name not in ("messages", "queued")
        }
        state = PausedState(messages=messages, queued_messages=queued, **fields)
        state.check()
        return state

    def check(self) -> None:
        """Raise `PausedStateError` unless the state is internally consistent."""
        from ferrule.core.messages import ModelResponse

        if not self.messages or not isinstance(self.messages[-1], ModelResponse):
            raise PausedStateError(
                "the paused state's history must end with the model response being decided"
            )
        if not 0 <= self.new_message_index <= len(self.messages):
            raise PausedStateError("the paused state's new_message_index is out of range")
        if not self.pending:
            raise PausedStateError("the paused state has no pending calls")
        call_ids = {p.tool_call_id for p in self.messages[-1].tool_calls}
        ids = [p.tool_call_id for p in self.pending] + list(self.immediate_call_ids)
        if len(set(ids)) != len(ids) or not set(ids) <= call_ids:
            raise PausedStateError("the paused state's pending calls do not match the last model response")


def _unencodable_message(state: PausedState, exc: Exception) -> str:
    """What `to_json` could not encode, where it is, and what to do (only on that failure)."""
    found = _unencodable(state, "")
    if found is None:
        where = "a value in it"
    else:
        path, value, owner = found
        where = f"{path.lstrip('.')} is a {type(value).__name__}"
        if owner is not None:
            where += f" (in the call or result of tool {owner.tool_name!r}, call ID {owner.tool_call_id!r})"
    return (
        f"the paused state cannot be written as JSON: {where} ({exc}). A checkpoint store that keeps "
        "states as JSON (SqliteCheckpointStore, PausedState.to_json) needs JSON data there: make the tool's "
        "ToolReturn(metadata=...) JSON data (dicts, lists, strings, numbers, booleans, None or msgspec "
        "Structs), or use InMemoryCheckpointStore, which keeps objects as they are"
    )


def _unencodable(value: Any, path: str, owner: Any = None) -> tuple[str, Any, Any] | None:
    """The path of the first value in `value` that msgspec cannot encode, that value, and the
    innermost part with a `tool_call_id` holding it (the call it belongs to)."""
    if isinstance(value, msgspec.Struct):
        if hasattr(value, "tool_call_id") and hasattr(value, "tool_name"):
            owner = value
        for name in value.__struct_fields__:
            found = _unencodable(getattr(value, name), f"{path}.{name}", owner)
            if found is not None:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(cast("Sequence[Any]", value)):
            found = _unencodable(item, f"{path}[{index}]", owner)
            if found is not None:
                return found
        return None
    if isinstance(value, dict):
        for key, item in cast("dict[Any, Any]", value).items():
            try:
                msgspec.json.encode({key: None})
            except (TypeError, msgspec.EncodeError):
                return f"a key of {path.lstrip('.')}", key, owner
            label = repr(key) if len(repr(key)) <= 40 else f"{repr(key)[:37]}..."
            found = _unencodable(item, f"{path}[{label}]", owner)
            if found is not None:
                return found
        return None
    try:
        msgspec.json.encode(value)
    except (TypeError, msgspec.EncodeError):
        return path, value, owner
    return None


class _StateWire(msgspec.Struct, kw_only=True):
    """`PausedState` as written: the history is embedded as a versioned history document."""

    run_id: str
    state_id: str
    created_at: datetime
    messages: msgspec.Raw
    new_message_index: int
    instructions: str | None
    usage: RunUsage
    tool_retries: dict[str, int]
    output_retries: int
    pending: list[DeferredCall]
    immediate_call_ids: list[str]
    tool_fingerprint: str
    model: str | None = None
    capabilities: list[str] = msgspec.field(default_factory=list)  # pyright: ignore[reportUnknownVariableType]
    queued: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b"null"))
    catalog_fingerprint: str | None = None


class _Envelope(msgspec.Struct, kw_only=True):
    format: str
    version: int
    state: msgspec.Raw
    mac: str | None = None


class Approved(msgspec.Struct, frozen=True, kw_only=True, tag="approved", tag_field="decision"):
    """Approve a call; `override_args` replaces the model's arguments (validated again)."""

    override_args: dict[str, Any] | None = None
    """Arguments to use instead of the model's."""


class Denied(msgspec.Struct, frozen=True, tag="denied", tag_field="decision"):
    """Deny a call; the model receives `message` as the call's result (`outcome="denied"`).

    `Denied("reason")` and `Denied(message="reason")` are the same, as for PydanticAI's `ToolDenied`.
    """

    message: str = "The tool call was denied."
    """What the model is told."""


class ExternalResult(msgspec.Struct, frozen=True, kw_only=True, tag="external", tag_field="decision"):
    """The result of an externally executed call."""

    value: Any = None
    """The result sent to the model (any JSON value)."""
    error: bool = False
    """Whether the external execution failed; the model then receives `value` as an error result."""


Decision: TypeAlias = Approved | Denied | ExternalResult
"""One decision for a deferred call."""

ToolApproved = Approved
"""PydanticAI's name for `Approved` (`ToolApproved(override_args=...)`)."""
ToolDenied = Denied
"""PydanticAI's name for `Denied` (`ToolDenied("message")`)."""


class DeferredToolRequests(msgspec.Struct, kw_only=True):
    """The output of a run that ended at calls waiting for a decision (PydanticAI's form of a pause).

    An agent whose `output_type` includes `DeferredToolRequests` (`[str, DeferredToolRequests]`, or
    a union) ends `run`/`run_sync` with it instead of raising `PauseRequiredError`; the run is
    continued by `run_sync(message_history=result.all_messages(), deferred_tool_results=...)`.
    """

    calls: list[ToolCallPart] = msgspec.field(default_factory=list)  # pyright: ignore[reportUnknownVariableType]
    """Calls of external tools: answer each in `DeferredToolResults.calls`."""
    approvals: list[ToolCallPart] = msgspec.field(default_factory=list)  # pyright: ignore[reportUnknownVariableType]
    """Calls waiting for approval: answer each in `DeferredToolResults.approvals`."""


class DeferredToolResults(msgspec.Struct, kw_only=True):
    """The decisions that continue a run which ended with `DeferredToolRequests`, keyed by call ID.

    Exactly one entry per pending call: `approvals` for calls waiting for approval (`True`,
    `False`, `ToolApproved(override_args=...)` or `ToolDenied(message)`), `calls` for external calls
    (any JSON value is the result; a `ModelRetry` is sent as a failed result with its message).
    """

    calls: dict[str, Any] = msgspec.field(default_factory=dict)  # pyright: ignore[reportUnknownVariableType]
    """Results of external calls."""
    approvals: dict[str, bool | Approved | Denied] = msgspec.field(default_factory=dict)  # pyright: ignore[reportUnknownVariableType]
    """Approvals of calls that wait for one."""

    def decisions(self) -> dict[str, Decision]:
        """The same decisions in ferrule's form, or `DecisionError` for a value that is not one."""
        decisions: dict[str, Decision] = {}
        for call_id, approval in self.approvals.items():
            if approval is True:
                decisions[call_id] = Approved()
            elif approval is False:
                decisions[call_id] = Denied()
            elif isinstance(approval, (Approved, Denied)):  # pyright: ignore[reportUnnecessaryIsInstance]
                decisions[call_id] = approval
            else:
                raise DecisionError(
                    f"the approval of call {call_id!r} must be True, False, ToolApproved or ToolDenied, "
                    f"got {approval!r}"
                )
        for call_id, value in self.calls.items():
            if call_id in decisions:
                raise DecisionError(
                    f"call {call_id!r} is in both approvals and calls: give exactly one decision per call"
                )
            if isinstance(value, (Approved, Denied)):
                raise DecisionError(
                    f"calls[{call_id!r}] is an approval decision: approvals go in DeferredToolResults.approvals"
                )
            if isinstance(value, ModelRetry):
                decisions[call_id] = ExternalResult(value=value.message, error=True)
            elif isinstance(value, ExternalResult):
                decisions[call_id] = value
            else:
                decisions[call_id] = ExternalResult(value=value)
        return decisions


def deferred_requests(paused: Paused) -> DeferredToolRequests:
    """The pending calls of a pause as PydanticAI's `DeferredToolRequests` (the parts the model sent)."""
    last = paused.state.messages[-1]
    parts = {p.tool_call_id: p for p in last.tool_calls} if isinstance(last, ModelResponse) else {}
    requests = DeferredToolRequests()
    for call in paused.pending:
        part = parts[call.tool_call_id]  # `PausedState.check` makes every pending ID one of the response's
        (requests.calls if call.kind == "external" else requests.approvals).append(part)
    return requests


class ResumeDecisions(msgspec.Struct, kw_only=True):
    """A versioned JSON wrapper of decisions, for integrations across process boundaries."""

    decisions: dict[str, Decision]
    """Decisions keyed by tool call ID."""
    format: str = DECISIONS_FORMAT
    """The format marker."""
    version: int = 1
    """The format version."""

    def to_json(self) -> bytes:
        """The JSON document."""
        return msgspec.json.encode(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> dict[str, Decision]:
        """Read decisions written by `to_json`; malformed or future-version input is rejected."""
        try:
            wrapper = bounded_json.decode(data, type=ResumeDecisions, limits=bounded_json.PAUSED_STATE)
        except bounded_json.JsonError as exc:
            raise DecisionError(f"the decisions document is malformed: {exc}") from exc
        if wrapper.format != DECISIONS_FORMAT:
            raise DecisionError(f"not a ferrule decisions document (format {wrapper.format!r})")
        if wrapper.version != 1:
            raise DecisionError(
                f"unsupported decisions version {wrapper.version}; this release reads version 1"
            )
        return wrapper.decisions


def check_decisions(state: PausedState, decisions: Mapping[str, Any]) -> dict[str, Decision]:
    """Exactly one well-typed decision per pending call, or `DecisionError`."""
    if not isinstance(decisions, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise DecisionError(
            "decisions must be a mapping of tool call ID to Approved, Denied or ExternalResult"
        )
    pending = {p.tool_call_id: p for p in state.pending}
    missing = [i for i in pending if i not in decisions]
    extra = [i for i in decisions if i not in pending]
    if missing or extra:
        parts: list[str] = []
        if missing:
            parts.append(
                "missing decisions for " + ", ".join(f"{i!r} ({pending[i].tool_name})" for i in missing)
            )
        if extra:
            parts.append("decisions for calls that are not pending: " + ", ".join(repr(i) for i in extra))
        raise DecisionError("; ".join(parts) + "; give exactly one decision per pending call")
    checked: dict[str, Decision] = {}
    for call_id, decision in decisions.items():
        call = pending[call_id]
        if not isinstance(decision, (Approved, Denied, ExternalResult)):
            raise DecisionError(
                f"the decision for {call_id!r} must be Approved, Denied or ExternalResult, got {decision!r}"
            )
        if call.kind == "approval" and isinstance(decision, ExternalResult):
            raise DecisionError(
                f"call {call_id!r} ({call.tool_name}) needs approval: decide with Approved or Denied"
            )
        if call.kind == "external" and isinstance(decision, Approved):
            raise DecisionError(
                f"call {call_id!r} ({call.tool_name}) is external: supply ExternalResult (or Denied)"
            )
        checked[call_id] = decision
    return checked


def new_state_id() -> str:
    """A fresh pause identifier."""
    return uuid.uuid4().hex


def now_utc() -> datetime:
    """The current UTC time."""
    return datetime.now(UTC)


class Paused:
    """The outcome of `run_until_pause` when calls need decisions: the resumable state."""

    __slots__ = ("actions", "state")

    def __init__(self, state: PausedState, actions: Sequence[ActionReceipt] = ()) -> None:
        self.state = state
        """The resumable state; serialize it with `state.to_json()`."""
        self.actions: list[ActionReceipt] = list(actions)
        """Receipts of the run's calls of tools that are not read-only up to the pause: those that
        ran, and a `confirmation_required` receipt per call waiting for approval."""

    @property
    def pending(self) -> list[DeferredCall]:
        """The calls that need a decision."""
        return self.state.pending

    @property
    def usage(self) -> RunUsage:
        """Usage up to the pause."""
        return self.state.usage

    def all_messages(self) -> list[Message]:
        """The history up to the pause."""
        return list(self.state.messages)

    def to_json(self, *, integrity_key: bytes | None = None) -> bytes:
        """Shorthand for `state.to_json(...)`."""
        return self.state.to_json(integrity_key=integrity_key)

    def __repr__(self) -> str:
        names = ", ".join(f"{p.tool_name}({p.kind})" for p in self.pending)
        return f"Paused(pending=[{names}])"


class PauseRequiredError(AgentRunError):
    """The model called a tool that needs approval or external execution, but the run cannot pause.

    `run`, `run_sync` and `run_stream` refuse to discard a required pause; use `run_until_pause`
    (or `resume`) instead. The pause is kept on the error as `paused`.
    """

    def __init__(self, paused: Paused) -> None:
        self.paused = paused
        """The pause that was required, with its resumable state."""
        super().__init__(self._message("run"))

    def _message(self, method: str) -> str:
        names = ", ".join(sorted({c.tool_name for c in self.paused.pending}))
        suffix = "_sync" if method.endswith("_sync") else ""
        return (
            f"the run needs decisions for deferred tool calls ({names}); call agent.run_until_pause{suffix}() "
            f"and agent.resume{suffix}() instead of agent.{method}()"
        )

    def called(self, method: str) -> None:
        """Name `method` (the entry point the application called) in the message."""
        self.args = (self._message(method),)
