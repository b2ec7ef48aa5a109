"""Conformance with real Messages API traffic recorded by PydanticAI (read in place, never copied).

Every interaction under the three Anthropic folders is collected. Messages API responses (buffered
and streamed, including Bedrock `invoke` bodies, which are Messages API messages) are decoded with
ferrule's codec and checked against a digest computed independently from the recorded JSON: text,
tool calls, thinking signatures, finish reason and usage. Error responses must raise the right error
class. A sample is also checked against values written out inline, and ferrule-encoded requests for
matching scenarios are compared structurally with the recorded requests.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any
from typing import cast

import pytest

from ferrule.core.conformance import replay
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ProviderError
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import NativeTool
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import ProviderExtraBody
from ferrule.providers.anthropic import codec
from ferrule.providers.anthropic.profiles import anthropic_profile
from tests.support.cassettes import ANTHROPIC_FOLDERS
from tests.support.cassettes import SKIP_REASON
from tests.support.cassettes import Interaction
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions
from tests.support.provtests import two_parts

pytestmark = pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)

FOLDERS = ANTHROPIC_FOLDERS

# Interactions in these folders that are not Messages API responses, with the reason they are not
# decoded here. Everything else must decode (or, for an error status, raise the mapped error).
SKIP_URIS = {
    "/v1/messages/count_tokens": "token counting is a different endpoint (no ModelResponse); ferrule has no count_tokens API yet",
    "api.openai.com": "OpenAI traffic of a cross-provider test; covered by ferrule-openai's conformance",
    "generativelanguage.googleapis.com": "Google traffic of a cross-provider test; covered by ferrule-google's conformance",
    "example-files.online-convert.com": "a plain file download made by the test itself, not model traffic",
    "t3.ftcdn.net": "a plain image download made by the test itself, not model traffic",
}

FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_call",
    "refusal": "content_filter",
    "pause_turn": "other",
}


def _all() -> list[Interaction]:
    return list(iter_interactions(*FOLDERS))


def _skip_reason(it: Interaction) -> str | None:
    for marker, reason in SKIP_URIS.items():
        if marker in it.uri:
            return reason
    return None


def _is_messages(it: Interaction) -> bool:
    path = it.uri.split("?", 1)[0]
    return path.endswith("/v1/messages") or (path.endswith("/invoke") and "anthropic" in path)


INTERACTIONS = _all()
BY_ID = {it.id: it for it in INTERACTIONS}


def _decode(it: Interaction) -> ModelResponse:
    """The recorded response through the codec (a stream checked as `replay` checks streams)."""
    return replay(codec.AnthropicCodec(), it)


# -- a digest of the recorded response, computed without ferrule -----------------------------------


def _digest(it: Interaction) -> dict[str, Any]:
    if not it.is_stream:
        body = it.response_json
        blocks = body["content"]
        usage = body.get("usage") or {}
        return {
            "blocks": blocks,
            "usage": usage,
            "stop": body.get("stop_reason"),
            "id": body.get("id"),
            "model": body.get("model"),
        }
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    stop = msg_id = model = None
    for line in (it.response_text or "").splitlines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        kind = event["type"]
        if kind == "message_start":
            usage.update(event["message"]["usage"])
            msg_id, model = event["message"]["id"], event["message"]["model"]
        elif kind == "content_block_start":
            block = dict(event["content_block"])
            block["_json"] = ""
            blocks[event["index"]] = block
        elif kind == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "input_json_delta":
                block["_json"] += delta["partial_json"]
        elif kind == "message_delta":
            stop = event["delta"].get("stop_reason") or stop
            reported: dict[str, Any] = event.get("usage") or {}
            usage.update({k: v for k, v in reported.items() if v is not None})
    ordered: list[dict[str, Any]] = []
    for _, block in sorted(blocks.items()):
        if block["_json"].strip():
            block["input"] = json.loads(block["_json"])
        ordered.append(block)
    return {"blocks": ordered, "usage": usage, "stop": stop, "id": msg_id, "model": model}


@pytest.mark.parametrize("it", INTERACTIONS, ids=[it.id for it in INTERACTIONS])
def test_every_recorded_interaction(it: Interaction) -> None:
    if it.status != 200 and "api.anthropic.com" in it.uri:
        # Every Anthropic endpoint shares the error envelope, so error bodies are checked for all.
        with pytest.raises(ProviderError) as info:
            _decode(it)
        error = it.response_json["error"]
        assert info.value.code == error["type"]
        assert error["message"] in info.value.message
        assert isinstance(info.value, BadRequestError)  # invalid_request_error and not_found_error
        return
    reason = _skip_reason(it)
    if reason is not None:
        pytest.skip(reason)
    assert _is_messages(it), f"unclassified interaction {it.uri}: add it to SKIP_URIS with a reason"

    response = _decode(it)
    digest = _digest(it)
    blocks = digest["blocks"]
    assert response.provider_name == "anthropic"
    assert response.model_name == digest["model"]
    assert response.provider_response_id == digest["id"]
    assert response.raw_finish_reason == digest["stop"]
    assert response.finish_reason == FINISH.get(digest["stop"], "other")

    texts = [b["text"] for b in blocks if b["type"] == "text" and b["text"]]
    assert response.text == ("".join(texts) if texts else None)
    tool_uses = [(b["name"], b["id"], b.get("input", {})) for b in blocks if b["type"] == "tool_use"]
    assert [(c.tool_name, c.tool_call_id, c.args) for c in response.tool_calls] == tool_uses
    signatures = [b.get("signature") or None for b in blocks if b["type"] == "thinking"]
    thinking = [p for p in response.parts if isinstance(p, ThinkingPart) and not p.provider_details]
    assert [p.signature for p in thinking] == signatures
    assert [p.content for p in thinking] == [b["thinking"] for b in blocks if b["type"] == "thinking"]
    redacted = [b["data"] for b in blocks if b["type"] == "redacted_thinking"]
    assert [
        p.provider_details["data"]
        for p in response.parts
        if isinstance(p, ThinkingPart) and p.provider_details
    ] == redacted
    native_calls = [b["id"] for b in blocks if b["type"] in ("server_tool_use", "mcp_tool_use")]
    assert [p.tool_call_id for p in response.parts if isinstance(p, NativeToolCallPart)] == native_calls
    native_results = [b["tool_use_id"] for b in blocks if b["type"].endswith("_tool_result")]
    assert [p.tool_call_id for p in response.parts if isinstance(p, NativeToolReturnPart)] == native_results

    usage = digest["usage"]
    cache_write = usage.get("cache_creation_input_tokens") or 0
    cache_read = usage.get("cache_read_input_tokens") or 0
    iterations: list[dict[str, Any]] = usage.get("iterations") or []
    compaction = [i for i in iterations if i.get("type") == "compaction"]
    assert response.usage.input_tokens == usage.get("input_tokens", 0) + cache_write + cache_read + sum(
        i["input_tokens"] for i in compaction
    )
    assert response.usage.output_tokens == usage.get("output_tokens", 0) + sum(
        i["output_tokens"] for i in compaction
    )
    assert response.usage.cache_write_tokens == cache_write
    assert response.usage.cache_read_tokens == cache_read


def test_the_skip_list_is_small_and_everything_else_is_decoded() -> None:
    skipped = [it.id for it in INTERACTIONS if _skip_reason(it) is not None]
    decoded = [it for it in INTERACTIONS if _skip_reason(it) is None]
    assert len(decoded) >= 170
    assert sum(it.is_stream for it in decoded) >= 16
    assert len(skipped) <= 13


# -- a sample, checked against values written out here ---------------------------------------------


def _get(it_id: str) -> ModelResponse:
    return _decode(BY_ID[it_id])


def test_sample_parallel_tool_calls() -> None:
    r = _get("test_anthropic/test_multiple_parallel_tool_calls#0")
    assert r.text is not None
    assert r.text.startswith("I'll help you find out who is the youngest")
    assert [(c.tool_name, c.args, c.tool_call_id) for c in r.tool_calls] == [
        ("retrieve_entity_info", {"name": "Alice"}, "toolu_0167cfEnoQaPviGdVXA95zcu"),
        ("retrieve_entity_info", {"name": "Bob"}, "toolu_01EEe2V5HD1Ac4rKiUR4HD2T"),
        ("retrieve_entity_info", {"name": "Charlie"}, "toolu_01XFyAjstT3966qvRynZyVPo"),
        ("retrieve_entity_info", {"name": "Daisy"}, "toolu_013mnQZbgtK2oe3Mo3XKJsx3"),
    ]
    assert r.finish_reason == "tool_call"
    assert r.raw_finish_reason == "tool_use"
    assert (r.usage.input_tokens, r.usage.output_tokens) == (423, 202)
    assert r.model_name == "claude-haiku-4-5-20251001"


def test_sample_thinking_signature() -> None:
    r = _get("test_anthropic/test_anthropic_model_thinking_part#0")
    thinking, text = two_parts(r, ThinkingPart, TextPart)
    assert thinking.content.startswith("This is a straightforward question about pedestria")
    assert thinking.signature is not None
    assert thinking.signature.startswith("Eq8CCkYICxgCKkDdadQOXMzNBqjrNVAKWsgU")
    assert thinking.provider_name == "anthropic"
    assert text.content.startswith("Here's how to cross the street safely:")
    assert r.finish_reason == "stop"
    assert (r.usage.input_tokens, r.usage.output_tokens) == (43, 321)


def test_sample_redacted_thinking() -> None:
    r = _get("test_anthropic/test_anthropic_model_thinking_part_redacted#0")
    redacted = r.parts[0]
    assert isinstance(redacted, ThinkingPart)
    assert redacted.content == ""
    assert redacted.provider_details is not None
    assert redacted.provider_details["type"] == "redacted_thinking"
    assert redacted.provider_details["data"].startswith("EvgFCkYIBxgCKkBmxKtCnM3xlr1zpw0Ik4FY0bnz")
    assert (r.usage.input_tokens, r.usage.output_tokens) == (92, 196)


def test_sample_web_search_with_citations() -> None:
    r = _get("test_anthropic/test_anthropic_web_search_tool#0")
    call = next(p for p in r.parts if isinstance(p, NativeToolCallPart))
    result = next(p for p in r.parts if isinstance(p, NativeToolReturnPart))
    assert (call.tool_name, call.args, call.tool_call_id) == (
        "web_search",
        {"query": "San Francisco weather today"},
        "srvtoolu_01EoSNE7k4dUJyGatASCV5qs",
    )
    assert result.tool_name == "web_search"
    assert result.tool_call_id == call.tool_call_id
    assert result.content[0]["title"] == "San Francisco, CA Weather Forecast | AccuWeather"
    cited = [p for p in r.parts if isinstance(p, TextPart) and p.citations]
    assert cited[0].content == "Temperature: 66°F with clear skies"
    assert cited[0].citations is not None
    assert cited[0].citations[0]["type"] == "web_search_result_location"
    assert r.usage.details["web_search_requests"] == 1
    assert (r.usage.input_tokens, r.usage.output_tokens) == (8984, 520)


def test_sample_bash_code_execution() -> None:
    r = _get("test_anthropic/test_anthropic_code_execution_tool#0")
    call = next(p for p in r.parts if isinstance(p, NativeToolCallPart))
    result = next(p for p in r.parts if isinstance(p, NativeToolReturnPart))
    assert call.tool_name == "code_execution"
    assert call.provider_details == {"anthropic_tool_name": "bash_code_execution"}
    assert call.args == {"command": "echo $((3 * 12390))"}
    assert result.provider_details == {"anthropic_tool_name": "bash_code_execution"}
    assert result.content["stdout"] == "37170\n"
    assert r.text == "The result of **3 \u00d7 12,390 = 37,170**."


def test_sample_pause_turn() -> None:
    r = _get("test_anthropic/test_pause_turn_web_search_vcr#0")
    assert r.finish_reason == "other"
    assert r.raw_finish_reason == "pause_turn"
    assert r.state == "suspended"
    assert r.usage.details["web_search_requests"] == 10
    assert r.usage.input_tokens == 401468
    # The last server call is still running when the turn pauses: no result for it yet.
    last = r.parts[-1]
    assert isinstance(last, NativeToolCallPart)
    assert last.tool_call_id == "srvtoolu_01RGq5wiPsxhz5Wk3Nj1w2JU"


def test_sample_cache_usage() -> None:
    r = _get("test_anthropic/test_anthropic_cache_real_api#1")
    assert r.usage.cache_write_tokens == 418
    assert r.usage.cache_read_tokens == 1111
    assert r.usage.input_tokens == 3 + 418 + 1111
    assert r.usage.output_tokens == 33
    assert r.usage.cache_reported


def test_sample_mcp_tool() -> None:
    r = _get("test_anthropic/test_anthropic_mcp_servers#0")
    call = next(p for p in r.parts if isinstance(p, NativeToolCallPart))
    result = next(p for p in r.parts if isinstance(p, NativeToolReturnPart))
    assert call.tool_name == "mcp_server:deepwiki"
    assert call.args == {
        "action": "call_tool",
        "tool_name": "ask_question",
        "tool_args": {
            "question": "What is pydantic-ai and what does this repository do?",
            "repoName": "pydantic/pydantic-ai",
        },
    }
    assert result.tool_name == "mcp_server:deepwiki"
    assert result.content["is_error"] is False
    assert result.content["content"][0]["text"].startswith("Pydantic AI is a Python agent framework")


def test_sample_advisor_and_thinking_tokens() -> None:
    r = _get("test_anthropic/test_anthropic_advisor_tool#0")
    call = next(p for p in r.parts if isinstance(p, NativeToolCallPart))
    result = next(p for p in r.parts if isinstance(p, NativeToolReturnPart))
    assert (call.tool_name, call.args) == ("advisor", None)
    assert result.content["type"] == "advisor_result"
    assert r.usage.reasoning_tokens == 28
    assert r.usage.output_reasoning_tokens == 28
    assert r.text is not None
    assert r.text.endswith("2 + 2 = 4")
    assert r.model_name == "claude-sonnet-5"


def test_sample_web_fetch() -> None:
    r = _get("test_anthropic/test_anthropic_web_fetch_tool#0")
    result = next(p for p in r.parts if isinstance(p, NativeToolReturnPart))
    assert result.tool_name == "web_fetch"
    assert result.content["url"] == "https://ai.pydantic.dev"
    assert result.content["content"]["title"] == "Pydantic AI"
    assert r.usage.details["web_fetch_requests"] == 1


def test_sample_native_output_json() -> None:
    r = _get("test_output/test_mixed_tools_native_output#1")
    assert r.text is not None
    assert json.loads(r.text)["city"] == "Tokyo"
    assert (r.usage.input_tokens, r.usage.output_tokens) == (957, 23)


def test_sample_error_response_maps_to_bad_request() -> None:
    it = BY_ID["test_anthropic/test_anthropic_explicit_effort_xhigh_unsupported_model_errors#0"]
    with pytest.raises(BadRequestError, match="does not support effort level 'xhigh'") as info:
        codec.decode_response(it.response_bytes)
    assert info.value.code == "invalid_request_error"


def test_sample_streamed_thinking() -> None:
    r = _get("test_anthropic/test_anthropic_model_thinking_part_stream#0")
    thinking, text = two_parts(r, ThinkingPart, TextPart)
    assert thinking.content == (
        "This is a straightforward question about pedestrian safety. I should provide clear, helpful advice "
        "about how to safely cross a street. This is basic safety information that could help prevent accidents."
    )
    assert thinking.signature is not None
    assert thinking.signature.startswith("EvMCCkYICxgCKkCHP2cS")
    assert text.content.startswith("Here are the basic steps for safely crossing the street:")
    assert r.model_name == "claude-sonnet-4-20250514"
    assert r.provider_response_id == "msg_01ALwQ87pTS7hH1PjSdC9wJD"
    assert (r.usage.input_tokens, r.usage.output_tokens) == (43, 282)


def test_sample_streamed_redacted_thinking() -> None:
    r = _get("test_anthropic/test_anthropic_model_thinking_part_redacted_stream#0")
    first, second, text = r.parts
    assert isinstance(first, ThinkingPart)
    assert isinstance(second, ThinkingPart)
    assert first.provider_details is not None
    assert first.provider_details["data"].startswith("EqkECkYIBxgCKkA8AZ4no")
    assert second.provider_details is not None
    assert second.provider_details["data"].startswith("EtgBCkYIBxgCKkDQfGkw")
    assert isinstance(text, TextPart)
    assert text.content.startswith("I notice that you've sent what appears")


def test_sample_streamed_citations_and_server_tools() -> None:
    r = _get("test_anthropic/test_anthropic_model_web_search_tool_stream#0")
    calls = [p for p in r.parts if isinstance(p, NativeToolCallPart)]
    assert [c.args for c in calls] == [
        {"query": "San Francisco weather today"},
        {"query": "San Francisco weather September 16 2025"},
    ]
    cited = [p for p in r.parts if isinstance(p, TextPart) and p.citations]
    assert [len(p.citations or ()) for p in cited] == [1, 2, 2, 1, 1]
    assert cited[0].content.startswith("today (September 16) shows a high of 76°F and low of 59°F")
    assert r.usage.details["web_search_requests"] == 2
    assert r.usage.input_tokens == 22397


def test_sample_streamed_mcp_and_compaction() -> None:
    mcp = _get("test_anthropic/test_anthropic_mcp_servers_stream#0")
    call = next(p for p in mcp.parts if isinstance(p, NativeToolCallPart))
    assert call.tool_name == "mcp_server:deepwiki"
    assert isinstance(call.args, dict)
    assert call.args["tool_args"]["repoName"] == "pydantic/pydantic-ai"
    compaction = _get("test_anthropic/test_anthropic_compaction_usage_with_cache_streaming#0")
    assert compaction.parts[0].part_kind == "compaction"
    assert compaction.text == "Hello! 👋"


def test_sample_streamed_text_editor_code_execution() -> None:
    r = _get("test_anthropic/test_anthropic_text_editor_code_execution_tool_stream#0")
    calls = [p for p in r.parts if isinstance(p, NativeToolCallPart)]
    assert all(isinstance(c.args, dict) for c in calls)
    assert [
        (
            c.tool_name,
            (c.provider_details or {}).get("anthropic_tool_name"),
            cast("dict[str, Any]", c.args)["command"],
        )
        for c in calls
    ] == [
        ("code_execution", "text_editor_code_execution", "create"),
        ("code_execution", "text_editor_code_execution", "view"),
        ("code_execution", "text_editor_code_execution", "view"),
    ]
    results = [p for p in r.parts if isinstance(p, NativeToolReturnPart)]
    assert [p.provider_details for p in results] == [
        {"anthropic_tool_name": "text_editor_code_execution"}
    ] * 3


# -- requests: ferrule's encoding of the same scenario, compared structurally -----------------------


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in cast("dict[str, Any]", value).items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in cast("list[Any]", value)]
    return value


def _normalize(body: dict[str, Any]) -> dict[str, Any]:
    """Representation differences that do not change meaning (an explicit null, a string for one
    text block, a list of system blocks, consecutive turns of one role), removed from both sides."""
    body = _drop_nulls(copy.deepcopy(body))
    system = body.pop("system", None)
    if isinstance(system, list):
        system = "\n\n".join(block["text"] for block in cast("list[dict[str, Any]]", system))
    if system and system.strip():
        body["system"] = system.strip()
    merged: list[dict[str, Any]] = []
    for message in body.get("messages", []):
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks: list[dict[str, Any]] = []
        for block in content:
            block = {k: v for k, v in block.items() if not (k == "caller" and v == {"type": "direct"})}
            if block["type"] == "tool_result" and isinstance(block.get("content"), str):
                block["content"] = [{"type": "text", "text": block["content"]}] if block["content"] else []
            blocks.append(block)
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": message["role"], "content": blocks})
    body["messages"] = merged
    if "tools" in body:
        for tool in body["tools"]:
            if "input_schema" in tool:
                tool.setdefault("description", "")
    return body


def _recorded(it_id: str) -> dict[str, Any]:
    return BY_ID[it_id].request_json


def _user_texts(body: dict[str, Any], index: int) -> list[str]:
    content = body["messages"][index]["content"]
    return [b["text"] for b in content if b["type"] == "text"]


def _prompt(body: dict[str, Any], index: int) -> ModelRequest:
    """The recorded user turn `index` (its first text block) as a prompt."""
    return ModelRequest.user_text_prompt(_user_texts(body, index)[0])


def _country_result(first: ModelResponse) -> ModelRequest:
    """The recorded tests' answer to the `get_user_country` call that `first` made."""
    return ModelRequest(
        parts=[
            ToolReturnPart(
                tool_name="get_user_country", content="Mexico", tool_call_id=first.tool_calls[0].tool_call_id
            )
        ]
    )


def _encode(call: ModelCall, model: str) -> dict[str, Any]:
    return json.loads(codec.encode_request(call, model_name=model, profile=anthropic_profile(model)).body)


def _tool(spec: dict[str, Any]) -> ToolDefinition:
    return ToolDefinition(
        name=spec["name"],
        description=spec.get("description"),
        parameters_json_schema=spec["input_schema"],
        strict=spec.get("strict"),
        defer_loading=spec.get("defer_loading", False),
    )


def _check(call: ModelCall, it_id: str) -> None:
    recorded = _recorded(it_id)
    ours = _encode(call, recorded["model"])
    assert _normalize(ours) == _normalize(recorded)


def _follow_up(test: str, then: ModelRequest | None = None) -> tuple[str, dict[str, Any], list[Message]]:
    """The recorded second request of `test`: its ID, its body and the history it replays.

    The history is the recorded first prompt, the recorded first answer, then `then` or else the
    recorded second prompt.
    """
    it_id = f"{test}#1"
    recorded = _recorded(it_id)
    return (
        it_id,
        recorded,
        [_prompt(recorded, 0), _get(f"{test}#0"), _prompt(recorded, 2) if then is None else then],
    )


SETTINGS = ModelSettings(max_tokens=4096)


def test_request_parallel_tool_results() -> None:
    it_id = "test_anthropic/test_multiple_parallel_tool_calls#1"
    recorded = _recorded(it_id)
    first = _get("test_anthropic/test_multiple_parallel_tool_calls#0")
    results = recorded["messages"][2]["content"]
    history: list[Message] = [
        ModelRequest(
            parts=[
                SystemPromptPart(content=recorded["system"]),
                UserPromptPart(content=_user_texts(recorded, 0)[0]),
            ]
        ),
        first,
        ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name="retrieve_entity_info", content=r["content"], tool_call_id=r["tool_use_id"]
                )
                for r in results
            ]
        ),
    ]
    call = ModelCall(messages=history, tools=[_tool(t) for t in recorded["tools"]], settings=SETTINGS)
    _check(call, it_id)


def test_request_replays_thinking_signature() -> None:
    it_id, _, history = _follow_up("test_anthropic/test_anthropic_model_thinking_part")
    settings = ModelSettings(max_tokens=4096, thinking_budget_tokens=1024)
    _check(ModelCall(messages=history, settings=settings), it_id)


def test_request_replays_redacted_thinking() -> None:
    it_id, _, history = _follow_up(
        "test_anthropic/test_anthropic_model_thinking_part_redacted",
        ModelRequest.user_text_prompt("What was that?"),
    )
    settings = ModelSettings(max_tokens=4096, thinking_budget_tokens=1024)
    _check(ModelCall(messages=history, settings=settings), it_id)


def test_request_thinking_with_tool_result() -> None:
    it_id = "test_anthropic/test_anthropic_tool_with_thinking#1"
    recorded = _recorded(it_id)
    first = _get("test_anthropic/test_anthropic_tool_with_thinking#0")
    history: list[Message] = [_prompt(recorded, 0), first, _country_result(first)]
    settings = ModelSettings(max_tokens=4096, thinking_budget_tokens=3000)
    call = ModelCall(messages=history, tools=[_tool(t) for t in recorded["tools"]], settings=settings)
    _check(call, it_id)


def test_request_replays_web_search_blocks() -> None:
    it_id, _, history = _follow_up(
        "test_anthropic/test_anthropic_web_search_tool",
        ModelRequest.user_text_prompt("how about Mexico City?"),
    )
    settings = ModelSettings(max_tokens=4096, thinking_budget_tokens=3000)
    call = ModelCall(messages=history, native_tools=[NativeTool(kind="web_search")], settings=settings)
    _check(call, it_id)


def test_request_replays_web_fetch_blocks() -> None:
    it_id, _, history = _follow_up("test_anthropic/test_anthropic_web_fetch_tool")
    settings = ModelSettings(max_tokens=4096, thinking_budget_tokens=3000)
    call = ModelCall(messages=history, native_tools=[NativeTool(kind="web_fetch")], settings=settings)
    _check(call, it_id)
    encoded = codec.encode_request(call, model_name="claude-sonnet-4-0")
    assert codec.BETA_WEB_FETCH in encoded.betas


def test_request_replays_bash_code_execution_with_container() -> None:
    it_id, recorded, history = _follow_up("test_anthropic/test_anthropic_code_execution_tool_container_reuse")
    settings = ModelSettings(
        max_tokens=4096,
        extra_body=[ProviderExtraBody(provider="anthropic", body={"container": recorded["container"]})],
    )
    call = ModelCall(
        messages=history,
        instructions=recorded["system"][0]["text"],
        native_tools=[NativeTool(kind="code_execution")],
        settings=settings,
    )
    _check(call, it_id)


def test_request_replays_mcp_blocks() -> None:
    it_id, recorded, history = _follow_up("test_anthropic/test_anthropic_mcp_servers")
    settings = ModelSettings(
        max_tokens=4096,
        thinking_budget_tokens=3000,
        extra_body=[ProviderExtraBody(provider="anthropic", body={"mcp_servers": recorded["mcp_servers"]})],
    )
    call = ModelCall(messages=history, settings=settings)
    _check(call, it_id)
    assert codec.BETA_MCP_CLIENT in codec.encode_request(call, model_name="claude-sonnet-4-0").betas


def test_request_pause_turn_continuation() -> None:
    it_id = "test_anthropic/test_pause_turn_web_search_vcr#1"
    recorded = _recorded(it_id)
    history: list[Message] = [_prompt(recorded, 0), _get("test_anthropic/test_pause_turn_web_search_vcr#0")]
    settings = ModelSettings(max_tokens=15000, thinking_budget_tokens=4096)
    call = ModelCall(messages=history, native_tools=[NativeTool(kind="web_search")], settings=settings)
    _check(call, it_id)


def test_request_pdf_bytes() -> None:
    it_id = "test_anthropic/test_document_binary_content_input#0"
    recorded = _recorded(it_id)
    text, document = recorded["messages"][0]["content"]
    data = base64.b64decode(document["source"]["data"])
    prompt = UserPromptPart(content=[text["text"], BinaryContent(data=data, media_type="application/pdf")])
    _check(ModelCall(messages=[ModelRequest(parts=[prompt])], settings=SETTINGS), it_id)


def test_request_text_document_bytes() -> None:
    it_id = "test_anthropic/test_text_document_as_binary_content_input#0"
    prompt = UserPromptPart(
        content=[
            "What does this text file say?",
            BinaryContent(data=b"Dummy TXT file\n", media_type="text/plain"),
        ]
    )
    _check(ModelCall(messages=[ModelRequest(parts=[prompt])], settings=SETTINGS), it_id)


def test_request_image_and_document_urls() -> None:
    image = _recorded("test_anthropic/test_image_url_input#0")["messages"][0]["content"][1]["source"]["url"]
    prompt = UserPromptPart(content=["What is this vegetable?", ImageUrl(url=image)])
    _check(
        ModelCall(messages=[ModelRequest(parts=[prompt])], settings=SETTINGS),
        "test_anthropic/test_image_url_input#0",
    )
    prompt = UserPromptPart(
        content=[
            "What is the main content on this document?",
            DocumentUrl(url="https://pdfobject.com/pdf/sample.pdf"),
        ]
    )
    _check(
        ModelCall(messages=[ModelRequest(parts=[prompt])], settings=SETTINGS),
        "test_anthropic/test_document_url_input#0",
    )


def test_request_sampling_effort_and_metadata() -> None:
    hello = [ModelRequest.user_text_prompt("hello")]
    _check(
        ModelCall(messages=hello, settings=ModelSettings(max_tokens=4096, temperature=0.2, top_k=40)),
        "test_anthropic/test_anthropic_sampling_settings_reach_the_wire#0",
    )
    _check(
        ModelCall(
            messages=[ModelRequest.user_text_prompt("What is 2+2?")],
            settings=ModelSettings(max_tokens=4096, reasoning_effort="low"),
        ),
        "test_anthropic/test_anthropic_opus_46_features[effort]#0",
    )
    metadata = ProviderExtraBody(provider="anthropic", body={"metadata": {"user_id": "123"}})
    _check(
        ModelCall(messages=hello, settings=ModelSettings(max_tokens=4096, extra_body=[metadata])),
        "test_anthropic/test_extra_headers#0",
    )


def test_request_native_output_and_strict_tool() -> None:
    it_id = "test_output/test_mixed_tools_native_output#0"
    recorded = _recorded(it_id)
    schema = recorded["output_config"]["format"]["schema"]
    call = ModelCall(
        messages=[_prompt(recorded, 0)],
        tools=[_tool(t) for t in recorded["tools"]],
        output=JsonSchemaFormat(name="CityInfo", schema=schema),
        settings=SETTINGS,
    )
    _check(call, it_id)


def test_request_prompted_output_history() -> None:
    it_id = "test_anthropic/test_anthropic_prompted_output#1"
    recorded = _recorded(it_id)
    first = _get("test_anthropic/test_anthropic_prompted_output#0")
    history: list[Message] = [_prompt(recorded, 0), first, _country_result(first)]
    call = ModelCall(
        messages=history,
        instructions=recorded["system"],
        tools=[_tool(t) for t in recorded["tools"]],
        settings=SETTINGS,
    )
    _check(call, it_id)


def test_request_history_starting_with_the_model() -> None:
    it_id = "test_anthropic/test_anthropic_model_empty_message_on_history#0"
    history: list[Message] = [
        ModelResponse(parts=[TextPart(content="Hello, how can I help you?")], provider_name="anthropic"),
        ModelRequest.user_text_prompt("I need a potato!"),
    ]
    _check(ModelCall(messages=history, instructions="You are a helpful assistant.", settings=SETTINGS), it_id)


def test_request_deferred_tool_loaded_by_reference() -> None:
    it_id = "test_anthropic/test_anthropic_deferred_capability_tool_callable_without_tool_search#2"
    recorded = _recorded(it_id)
    first = _get("test_anthropic/test_anthropic_deferred_capability_tool_callable_without_tool_search#0")
    second = _get("test_anthropic/test_anthropic_deferred_capability_tool_callable_without_tool_search#1")
    search = ToolCallPart(
        tool_name="search_tools", args={"queries": ["refunds"]}, tool_call_id="auto_load_0f10f8b659c3c105"
    )
    history: list[Message] = [
        _prompt(recorded, 0),
        first,
        ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name="load_capability", content={}, tool_call_id=first.tool_calls[0].tool_call_id
                )
            ]
        ),
        ModelResponse(parts=[search], provider_name="anthropic"),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name="search_tools",
                    content=["lookup_refund_policy"],
                    tool_call_id=search.tool_call_id,
                    tool_kind="tool-search",
                )
            ]
        ),
        second,
        ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name="lookup_refund_policy",
                    content="order-123: refund allowed",
                    tool_call_id=second.tool_calls[0].tool_call_id,
                )
            ]
        ),
    ]
    call = ModelCall(
        messages=history,
        instructions=recorded["system"][0]["text"],
        tools=[_tool(t) for t in recorded["tools"]],
        settings=SETTINGS,
    )
    _check(call, it_id)


def test_replay_survives_a_history_round_trip() -> None:
    """Signatures, redacted thinking and server-tool blocks survive ferrule's history JSON."""
    from ferrule.core import history

    checked = 0
    for it in INTERACTIONS:
        if it.status != 200 or _skip_reason(it) is not None or "api.anthropic.com" not in it.uri:
            continue
        messages: list[Message] = [
            ModelRequest.user_text_prompt("q"),
            _decode(it),
            ModelRequest.user_text_prompt("q2"),
        ]
        restored = history.loads(history.dumps(messages))
        before = codec.encode_request(ModelCall(messages=messages), model_name="claude-sonnet-4-5").body
        after = codec.encode_request(ModelCall(messages=restored), model_name="claude-sonnet-4-5").body
        assert after == before, it.id
        checked += 1
    assert checked >= 150
