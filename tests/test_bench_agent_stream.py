"""The agent-layer benchmark (`tools.bench.agent_stream`) runs each runner over the whole answer."""

from __future__ import annotations

import anyio
import pytest

from tools.bench.agent_stream import DELTAS
from tools.bench.agent_stream import RUNNERS
from tools.bench.agent_stream import PreparedRead
from tools.bench.agent_stream import runner


@pytest.mark.parametrize("name", RUNNERS)
@pytest.mark.parametrize("deltas", DELTAS)
def test_every_runner_sees_every_delta_of_the_answer(name: str, deltas: int) -> None:
    run = runner(name, deltas)
    # Twice: the prepared read is handed over again, whole, by every stream.
    assert anyio.run(run) == deltas
    assert anyio.run(run) == deltas


def test_the_prepared_read_is_one_list_of_the_answer() -> None:
    model = PreparedRead(3)
    assert model.text == "w0 w1 w2 "
    events = model._read()
    assert [type(event).__name__ for event in events] == [
        "PartStartEvent",
        "PartDeltaEvent",
        "PartDeltaEvent",
        "PartDeltaEvent",
        "PartEndEvent",
        "ResponseCompleted",
    ]
