from __future__ import annotations

import msgspec
import pytest

from ferrule.core import _test_codec as codec
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.messages import ModelResponse, TextPart


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
