from __future__ import annotations

import msgspec
import pytest

from ferrule.core import _test_codec as codec
from ferrule.core.conformance import AWKWARD_CHUNK_SIZES
from ferrule.core.conformance import assert_same_response
from ferrule.core.conformance import check_stream
from ferrule.core.conformance import feed_sse
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.model import ModelCall


def test_buffered_body_is_a_ferrule_response() -> None:
    body = msgspec.json.encode(ModelResponse(parts=[TextPart("hi")], finish_reason="stop"))
    response = codec.decode_response(body, model_name="m")
    assert response.text == "hi"
    assert (response.provider_name, response.model_name, response.finish_reason) == (
        "ferrule-test",
        "m",
        "stop",
    )


def test_stream_deltas_join_into_one_text_part() -> None:
    data = b'data: "a"\n\ndata: "b"\n\nevent: done\ndata: {"usage": {"output_tokens": 2}}\n\n'
    response = codec.decode_stream(data)
    assert response.parts == [TextPart("ab")]
    assert response.usage.output_tokens == 2


@pytest.mark.parametrize(
    "data",
    [b"", b'data: "a"\n\n', b'event: done\ndata: {"extra": 1}\n\n', b"data: 1\n\nevent: done\ndata: {}\n\n"],
)
def test_incomplete_or_malformed_streams_raise_instead_of_empty_success(data: bytes) -> None:
    with pytest.raises(ResponseDecodeError):
        codec.decode_stream(data)


def test_malformed_body_raises() -> None:
    with pytest.raises(ResponseDecodeError, match="invalid response body"):
        codec.decode_response(b"[]")


def test_the_codec_keeps_the_stream_contract() -> None:
    data = b'data: "a"\n\ndata: "b"\n\nevent: done\ndata: {"finish_reason": "stop"}\n\n'
    made = codec.FerruleTestCodec(model_name="m")
    events = feed_sse(made.stream_decoder(), data, chunk_sizes=AWKWARD_CHUNK_SIZES)
    response = check_stream(events)
    assert (response.text, response.model_name, response.finish_reason) == ("ab", "m", "stop")
    assert_same_response(response, codec.decode_stream(data, model_name="m"))
    call = ModelCall(messages=[ModelRequest.user_text_prompt("hi")], instructions="be brief")
    sent = msgspec.json.decode(made.encode(call, stream=True).body)
    assert (sent["stream"], sent["call"]["instructions"]) == (True, "be brief")
