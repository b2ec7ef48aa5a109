"""A streamed run's agent layer alone, in one process: `python -m tools.bench.agent_stream`.

Workloads 4a to 4d time a stream end to end, where the transport and the codec come with it and
the machine's load moves the figures by more than a change to the agent makes. This times what the
agent adds to a model's stream: a model that hands over one network read's worth of a text answer
(its delta events made once, outside the timing), so that no HTTP and no decoding is in the
figures, at 50 and 1,000 deltas:

- `model`: the model's own `stream_batches` (its contract check), the lists counted;
- `stream_text`: `Agent.run_stream`, every delta taken through `stream_text(delta=True)`;
- `events`: the same run, every event taken by iterating the stream;
- `run`: `Agent.run` on the same model, whose buffered request returns the same answer at once
  (the agent's own cost of a run, for comparison).

Prints the best of `--reps` samples in µs per run (the loop thread's CPU time, as `tools.bench.cpu`),
and for each the cost per delta between the two lengths and the fixed cost (what is left at no
delta). To compare two commits, run it with each commit's packages first on `PYTHONPATH` (see
`tools.bench.cpu`), both times: the environment's size alone can move a figure.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable

from ferrule.agent import Agent
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.profile import ModelProfile
from ferrule.core.streaming import ResponseBuilder
from ferrule.core.usage import RequestUsage
from tools.bench.cpu import cpu_per_run

DELTAS = (50, 1000)
RUNNERS = ("model", "stream_text", "events", "run")


class PreparedRead(Model):
    """A model whose every stream is one read: the text answer's events, made once."""

    def __init__(self, deltas: int) -> None:
        builder = ResponseBuilder()
        events: list[ModelStreamEvent] = [*builder.text("w0 ")]
        builder.texts([f"w{i} " for i in range(1, deltas)], events)
        events += builder.finish()
        self._events = events
        self.text = "".join(f"w{i} " for i in range(deltas))
        """The answer's whole text."""

    @property
    def model_name(self) -> str:
        return "prepared"

    @property
    def provider_name(self) -> str:
        return "bench"

    @property
    def profile(self) -> ModelProfile:
        return ModelProfile()

    def _read(self) -> list[ModelStreamEvent]:
        # A fresh response each time: the run records it in its history.
        response = ModelResponse(
            parts=[TextPart(self.text)],
            usage=RequestUsage(input_tokens=10, output_tokens=len(self._events)),
            model_name="prepared",
        )
        return [*self._events, ResponseCompleted(response)]

    async def _request(self, call: ModelCall) -> ModelResponse:
        completed = self._read()[-1]
        assert isinstance(completed, ResponseCompleted)
        return completed.response

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        for event in self._read():
            yield event

    def _stream_batches(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]]:
        return self._batches()

    async def _batches(self) -> AsyncIterator[list[ModelStreamEvent]]:
        yield self._read()


def runner(name: str, deltas: int) -> Callable[[], Awaitable[int]]:
    """One of `RUNNERS` on an answer of `deltas` deltas; each run returns the deltas it saw."""
    model = PreparedRead(deltas)
    agent = Agent(model)
    call = ModelCall(messages=[ModelRequest(parts=[UserPromptPart("Say something.")])])

    async def model_stream() -> int:
        seen = 0
        async for batch in model.stream_batches(call):
            seen += len(batch)
        return seen - 3  # the part's start, its end and the response

    async def stream_text() -> int:
        seen = 0
        async with agent.run_stream("Say something.") as stream:
            async for _delta in stream.stream_text(delta=True):
                seen += 1
        return seen

    async def events() -> int:
        seen = 0
        async with agent.run_stream("Say something.") as stream:
            async for event in stream:
                seen += type(event) is PartDeltaEvent
        return seen

    async def run() -> int:
        result = await agent.run("Say something.")
        return len(result.output.split())

    return {"model": model_stream, "stream_text": stream_text, "events": events, "run": run}[name]


async def _main(reps: int) -> None:
    short, long = DELTAS
    for name in RUNNERS:
        _, few = await cpu_per_run(runner(name, short), 200, reps)
        _, many = await cpu_per_run(runner(name, long), 20, reps)
        slope = (many - few) / (long - short)
        print(
            f"{name:12s} {short} deltas {few:8.1f} µs, {long} deltas {many:8.1f} µs: "
            f"{slope * 1e3:5.0f} ns per delta, {few - short * slope:6.1f} µs fixed",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=7, help="samples per figure (default 7)")
    asyncio.run(_main(parser.parse_args().reps))


if __name__ == "__main__":
    main()
