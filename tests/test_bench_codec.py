"""The codec benchmark (`tools.bench.codec`) times ferrule and the floor on the same deltas."""

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


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("deltas", DELTAS)
def test_ferrule_and_the_floor_decode_the_same_text(api: str, deltas: int) -> None:
    data = body(api, deltas)
    floor = raw_deltas(api, data)
    assert len(floor) == deltas
    texts: list[str] = []
    for event in ferrule_events(api, data):
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
            texts.append(event.part.content)
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            texts.append(event.delta.content_delta)
    assert "".join(texts) == "".join(floor)
    assert [t for t in texts if t] == floor
