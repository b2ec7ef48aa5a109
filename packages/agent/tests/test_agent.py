"""The agent loop end to end: prompts, instructions, tools, history, usage, step-wise iteration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
import pytest
from inline_snapshot import snapshot

from ferrule.agent import Agent
from ferrule.agent import FinalStep
from ferrule.agent import ModelResponseStep
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolResultsStep
from ferrule.agent import run_state_of
from ferrule.agent.exceptions import RunCancelledError
from ferrule.agent.model_strings import UnknownModelError
from ferrule.agent.model_strings import infer_model
from ferrule.agent.model_strings import unknown_provider_message
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.agent.testing import TestModel
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.profile import ModelProfile
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import RequestUsage
from ferrule.core.usage import UsageLimitExceeded
from ferrule.core.usage import UsageLimits
from tests.support.scripts import Script
from tests.support.scripts import recorded
from tests.support.scripts import text
from tests.support.scripts import tool_call

from ._support import modules_loaded_by

pytestmark = pytest.mark.anyio


async def test_text_run_returns_output_and_history() -> None:
    script = Script(text("hello"))
    agent = Agent(FunctionModel(script))
    result = await agent.run("hi")
    assert result.output == "hello"
    messages = result.all_messages()
    assert recorded(messages) == snapshot(
        [
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi"}], "run_id": "run-1"},
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": "hello"}],
                "usage": {"input_tokens": 51, "output_tokens": 1},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )
    assert result.new_messages() == messages
    assert result.usage.requests == 1


async def test_two_step_tool_run() -> None:
    script = Script(ModelResponse(parts=[tool_call("get_weather", '{"city": "Paris"}')]), text("sunny"))

    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    agent = Agent(FunctionModel(script), tools=[get_weather])
    result = await agent.run("weather?")
    assert result.output == "sunny"
    assert recorded(result.all_messages()) == snapshot(
        [
            {
                "kind": "request",
                "parts": [{"part_kind": "user-prompt", "content": "weather?"}],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [
                    {
                        "part_kind": "tool-call",
                        "tool_name": "get_weather",
                        "args": '{"city": "Paris"}',
                        "tool_call_id": "id_get_weather",
                    }
                ],
                "usage": {"input_tokens": 51, "output_tokens": 3},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "tool-return",
                        "tool_name": "get_weather",
                        "content": "sunny in Paris",
                        "tool_call_id": "id_get_weather",
                    }
                ],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": "sunny"}],
                "usage": {"input_tokens": 57, "output_tokens": 1},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )
    usage = result.usage
    assert usage.requests == 2
    assert usage.tool_calls == 1
    # The model saw the tool result on its second request.
    assert isinstance(script.seen[1][-1].parts[0], ToolReturnPart)


async def test_instructions_static_dynamic_and_run_order() -> None:
    script = Script(text("ok"))

    def dynamic(ctx: RunContext[str]) -> str:
        return f"deps={ctx.deps}"

    async def dynamic_async() -> str:
        return "async part"

    agent = Agent(FunctionModel(script), instructions=["static one", dynamic], deps_type=str)
    agent.instructions(dynamic_async)
    agent.instructions(lambda: "")  # empty values are ignored
    result = await agent.run("q", deps="D", instructions="run specific")
    expected = "static one\n\ndeps=D\n\nasync part\n\nrun specific"
    assert script.infos[0].instructions == expected
    first = result.all_messages()[0]
    assert isinstance(first, ModelRequest)
    assert first.instructions == expected


async def test_instructions_resolved_once_per_run_and_sent_every_step() -> None:
    calls = 0

    def dynamic() -> str:
        nonlocal calls
        calls += 1
        return f"call {calls}"

    script = Script(ModelResponse(parts=[tool_call("noop")]), text("done"))

    def noop() -> str:
        return "x"

    agent = Agent(FunctionModel(script), instructions=dynamic, tools=[noop])
    await agent.run("go")
    assert calls == 1
    assert [i.instructions for i in script.infos] == ["call 1", "call 1"]


async def test_settings_merge_model_agent_run() -> None:
    script = Script(text("ok"))
    model = FunctionModel(script, settings=ModelSettings(temperature=0.1, max_tokens=10))
    agent = Agent(model, model_settings=ModelSettings(temperature=0.5, seed=1))
    await agent.run("x", model_settings=ModelSettings(seed=2))
    settings = script.infos[0].model_settings
    assert (settings.temperature, settings.max_tokens, settings.seed) == (0.5, 10, 2)


async def test_message_history_is_continued_not_mutated() -> None:
    first = await Agent(FunctionModel(Script(text("one")))).run("a")
    history = first.all_messages()
    snapshot = msgspec.json.encode(history)
    script = Script(text("two"))
    second = await Agent(FunctionModel(script)).run("b", message_history=history)
    assert msgspec.json.encode(history) == snapshot
    assert len(script.seen[0]) == 3
    assert len(second.all_messages()) == 4
    assert len(second.new_messages()) == 2
    assert second.new_messages_json().startswith(b"[")
    decoded = msgspec.json.decode(second.all_messages_json(), type=list[Message])
    assert decoded[-1] == second.all_messages()[-1]


async def test_history_processors_see_a_copy_and_canonical_history_is_kept() -> None:
    script = Script(ModelResponse(parts=[tool_call("noop")]), text("done"))

    def keep_last(messages: list[Message]) -> list[Message]:
        messages.clear()  # mutating the list handed in must not touch the run's history
        return []

    def keep_last_two(ctx: RunContext[None], messages: list[Message]) -> list[Message]:
        return messages[-2:]

    def noop() -> str:
        return "x"

    agent = Agent(FunctionModel(script), tools=[noop], history_processors=[keep_last_two])
    result = await agent.run(
        "hello", message_history=[ModelRequest(parts=[UserPromptPart("old")]), text("old answer")]
    )
    assert len(script.seen[0]) == 2
    assert len(result.all_messages()) == 6
    agent2 = Agent(FunctionModel(Script(text("x"))), history_processors=[keep_last])
    result2 = await agent2.run("hello")
    assert len(result2.all_messages()) == 2


async def test_model_call_messages_is_a_stable_view() -> None:
    captured: list[Sequence[Message]] = []

    def fn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        captured.append(messages)
        if len(captured) == 1:
            return ModelResponse(parts=[tool_call("noop")])
        return text("done")

    def noop() -> str:
        return "x"

    await Agent(FunctionModel(fn), tools=[noop]).run("go")
    assert len(captured[0]) == 1  # later appends do not leak into an earlier call's view
    assert len(captured[1]) == 3
    assert captured[1][-1] is list(captured[1])[-1]
    assert isinstance(captured[1][0:2], list)
    with pytest.raises(IndexError):
        captured[0][1]


async def test_run_context_fields() -> None:
    seen: dict[str, Any] = {}
    script = Script(ModelResponse(parts=[tool_call("probe", {}, "c1")]), text("done"))

    async def probe(ctx: RunContext[dict[str, int]]) -> str:
        seen.update(
            deps=ctx.deps,
            tool_name=ctx.tool_name,
            call_id=ctx.tool_call_id,
            retry=ctx.retry,
            requests=ctx.usage.requests,
            messages=len(ctx.messages),
            deadline=ctx.deadline,
            model=ctx.model.system,
            prompt=ctx.prompt,
        )
        return "ok"

    agent = Agent(
        FunctionModel(script, model_name="m"), tools=[probe], deps_type=dict[str, int], run_timeout=30
    )
    await agent.run("p", deps={"a": 1})
    assert seen["deps"] == {"a": 1}
    assert (seen["tool_name"], seen["call_id"], seen["retry"], seen["requests"]) == ("probe", "c1", 0, 1)
    assert seen["messages"] == 2
    assert seen["deadline"] is not None
    assert seen["model"] == "function:m"
    assert seen["prompt"] == "p"


async def test_decorators_register_tools() -> None:
    script = Script(
        ModelResponse(parts=[tool_call("add", {"a": 1, "b": 2}), tool_call("hello", {}, "h")]), text("ok")
    )
    agent = Agent(FunctionModel(script), deps_type=int)

    @agent.tool
    def add(ctx: RunContext[int], a: int, b: int) -> int:
        return a + b + ctx.deps

    @agent.tool_plain(name="hello", side_effect="read_only")
    async def greet() -> str:
        return "hi"

    result = await agent.run("x", deps=10)
    returns = {
        p.tool_name: p.content for p in result.all_messages()[2].parts if isinstance(p, ToolReturnPart)
    }
    assert returns == {"add": 13, "hello": "hi"}
    assert {d.name for d in script.infos[0].function_tools} == {"add", "hello"}
    with pytest.raises(UserError, match="already registered"):
        agent.add_tool(Tool(add, name="add"))


def test_run_sync() -> None:
    agent = Agent(FunctionModel(Script(text("sync!"))))
    assert agent.run_sync("x").output == "sync!"


async def test_run_sync_refuses_inside_event_loop() -> None:
    agent = Agent(FunctionModel(Script(text("x"))))
    with pytest.raises(UserError, match=r"await agent\.run"):
        agent.run_sync("x")


async def test_iter_steps() -> None:
    script = Script(ModelResponse(parts=[tool_call("noop")]), text("final"))

    def noop() -> str:
        return "x"

    agent = Agent(FunctionModel(script), tools=[noop])
    steps: list[Any] = []
    async with agent.iter("go") as run:
        async for step in run:
            steps.append(step)
        assert run.result is not None
        assert run.result.output == "final"
        assert run.usage.requests == 2
    assert [type(s) for s in steps] == [ModelResponseStep, ToolResultsStep, ModelResponseStep, FinalStep]


async def test_iter_cancel_stops_the_run() -> None:
    script = Script(ModelResponse(parts=[tool_call("noop")]), text("final"))

    def noop() -> str:
        return "x"

    agent = Agent(FunctionModel(script), tools=[noop])
    async with agent.iter("go") as run:
        await run.next()
        run.cancel()
        with pytest.raises(RunCancelledError) as info:
            await run.next()
    state = run_state_of(info.value)
    assert state is not None
    assert len(state.messages) == 2


async def test_usage_aggregated_and_request_limit_exact_and_past() -> None:
    def looping(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if len(messages) >= 5:
            return text("done", usage=RequestUsage(input_tokens=10, output_tokens=1))
        return ModelResponse(parts=[tool_call("noop")], usage=RequestUsage(input_tokens=10, output_tokens=1))

    def noop() -> str:
        return "x"

    agent = Agent(FunctionModel(looping), tools=[noop])
    result = await agent.run("go", usage_limits=UsageLimits(request_limit=3))  # exactly 3 requests
    assert result.usage.requests == 3
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 3)
    with pytest.raises(UsageLimitExceeded) as info:
        await agent.run("go", usage_limits=UsageLimits(request_limit=2))
    state = run_state_of(info.value)
    assert state is not None
    assert state.usage.requests == 2


async def test_token_limit_exact_and_past() -> None:
    agent = Agent(FunctionModel(lambda m, i: text("x", usage=RequestUsage(input_tokens=7, output_tokens=3))))
    assert (await agent.run("q", usage_limits=UsageLimits(total_tokens_limit=10))).output == "x"
    with pytest.raises(UsageLimitExceeded, match="total_tokens_limit"):
        await agent.run("q", usage_limits=UsageLimits(total_tokens_limit=9))


async def test_profile_check_fails_before_the_model_is_called() -> None:
    called = False

    def fn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        nonlocal called
        called = True
        return text("x")

    def noop() -> str:
        return "x"

    agent = Agent(FunctionModel(fn, profile=ModelProfile()), tools=[noop])
    with pytest.raises(UnsupportedFeatureError):
        await agent.run("x")
    assert not called


async def test_prompt_or_history_required() -> None:
    agent = Agent(FunctionModel(Script(text("x"))))
    with pytest.raises(UserError, match="user prompt"):
        await agent.run()
    result = await agent.run(message_history=[ModelRequest(parts=[UserPromptPart("from history")])])
    assert result.output == "x"


async def test_prepare_can_hide_a_tool_per_step() -> None:
    script = Script(ModelResponse(parts=[tool_call("secret")]), text("done"))

    def hide_after_first(ctx: RunContext[None], definition: Any) -> Any:
        return definition if ctx.run_step == 0 else None

    def secret() -> str:
        return "s"

    agent = Agent(FunctionModel(script), tools=[Tool(secret, prepare=hide_after_first)])
    await agent.run("x")
    assert [len(i.function_tools) for i in script.infos] == [1, 0]


def test_model_strings() -> None:
    model = infer_model("test:my-model")
    assert isinstance(model, TestModel)
    assert model.model_name == "my-model"
    with pytest.raises(UnknownModelError) as info:
        infer_model("nosuchprovider:x")
    message = str(info.value)
    assert "did you mean" not in message  # nothing is near it
    assert "pip install" not in message
    assert "test" in message  # lists installed prefixes
    with pytest.raises(UnknownModelError) as info:
        infer_model("openia:gpt-5-mini")
    message = str(info.value)
    assert "did you mean 'openai'?" in message
    assert "ferrule-openia" not in message  # never a typosquattable name
    assert "pip install" not in message
    with pytest.raises(UnknownModelError, match="did you mean 'anthropic'"):
        infer_model("antropic:claude")
    with pytest.raises(UnknownModelError, match="no 'bedrock' provider yet"):
        infer_model("bedrock:x")
    # A prefix of a ferrule distribution that is not installed (asked directly: here it may be installed).
    message = unknown_provider_message("google-gla", ["test"])
    assert "is in ferrule-google, which is not installed" in message
    assert "python tools/install.py ferrule-google" in message
    with pytest.raises(UserError, match="provider:model"):
        infer_model("no-colon")


async def test_agent_with_model_string_resolves_lazily() -> None:
    agent = Agent("test:lazy", output_type=str)
    result = await agent.run("x")
    assert result.output == "success (no tool calls)"
    with pytest.raises(UserError, match="no model"):
        await Agent().run("x")


def test_no_opentelemetry_import_without_instrumentation() -> None:
    code = (
        "import anyio\n"
        "from ferrule.agent import Agent\n"
        "from ferrule.agent.testing import TestModel\n"
        "anyio.run(Agent(TestModel()).run, 'x')\n"
    )
    assert modules_loaded_by(code, ("opentelemetry",)) == []


async def test_instrumented_run_creates_spans() -> None:
    from opentelemetry import trace

    spans: list[str] = []

    class _Span:
        def __init__(self, name: str) -> None:
            spans.append(name)

        def set_attribute(self, *a: Any) -> None: ...
        def record_exception(self, *a: Any) -> None: ...
        def set_status(self, *a: Any) -> None: ...
        def end(self) -> None:
            spans.append("end")

    class _Tracer:
        def start_span(self, name: str, **kw: Any) -> _Span:
            return _Span(name)

    class _Provider(trace.TracerProvider):
        def get_tracer(self, *a: Any, **kw: Any) -> Any:
            return _Tracer()

    from ferrule.agent import InstrumentationSettings

    script = Script(ModelResponse(parts=[tool_call("noop")]), text("done"))

    def noop() -> str:
        return "x"

    agent = Agent(
        FunctionModel(script, model_name="m"),
        tools=[noop],
        name="weather",
        instrument=InstrumentationSettings(tracer_provider=_Provider()),
    )
    await agent.run("x")
    names = [s for s in spans if s != "end"]
    assert names == ["invoke_agent weather", "chat m", "execute_tool noop", "chat m"]
    assert spans.count("end") == 4


async def test_deadline_is_passed_to_the_model_call() -> None:
    script = Script(text("ok"))
    agent = Agent(FunctionModel(script), run_timeout=100)
    before = anyio.current_time()
    await agent.run("x", timeout=50)
    deadline = script.infos[0].call.deadline
    assert deadline is not None
    assert before + 49 < deadline <= anyio.current_time() + 50


def test_model_string_resolved_through_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    import ferrule.agent.model_strings as models

    made: list[str] = []

    def factory(name: str) -> TestModel:
        made.append(name)
        return TestModel(model_name=name)

    class FakeEntryPoint:
        name = "fakeprov"

        def load(self) -> Any:
            return factory

    monkeypatch.setattr(models, "_entry_points", lambda: {"fakeprov": FakeEntryPoint()})
    model = infer_model("fakeprov:big-model")
    assert isinstance(model, TestModel)
    assert made == ["big-model"]
    assert "fakeprov" in models.installed_providers()

    class BadEntryPoint(FakeEntryPoint):
        def load(self) -> Any:
            def not_a_model(name: str) -> str:
                return "not a model"

            return not_a_model

    monkeypatch.setattr(models, "_entry_points", lambda: {"fakeprov": BadEntryPoint()})
    with pytest.raises(UserError, match="not a Model"):
        infer_model("fakeprov:x")


def test_the_old_module_name_of_model_strings_still_resolves() -> None:
    import ferrule.agent.model_strings as model_strings
    import ferrule.agent.models as old

    assert old.infer_model is model_strings.infer_model
    assert old.UnknownModelError is model_strings.UnknownModelError
    assert isinstance(old.infer_model("test:m"), TestModel)
