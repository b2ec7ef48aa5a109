"""The codec benchmark (`tools.bench.codec`) times ferrule and the floor on the same deltas, read
in the same pieces."""

from __future__ import annotations

import pytest

from ferrule.core.messages import TextPart
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import TextPartDelta
from tools.bench.codec import DELTAS
from tools.bench.codec import body
from tools.bench.codec import ferrule_events
from tools.bench.codec import raw_deltas
from tools.bench.codec import reads


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("deltas", DELTAS)
def test_ferrule_and_the_floor_decode_the_same_text(api: str, deltas: int) -> None:
    data = body(api, deltas)
    chunks = reads(data)
    assert b"".join(chunks) == data
    assert len(chunks) == (1 if deltas == 50 else 4)  # the long bodies span several reads
    floor = raw_deltas(api, chunks)
    assert len(floor) == deltas
    texts: list[str] = []
    for event in ferrule_events(api, chunks):
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
            texts.append(event.part.content)
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            texts.append(event.delta.content_delta)
    assert "".join(texts) == "".join(floor)
    assert [t for t in texts if t] == floor
