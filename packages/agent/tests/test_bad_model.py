"""Bad model behaviour: each case gets its documented retry prompt or its own error class."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ferrule.agent import Agent
from ferrule.agent import run_state_of
from ferrule.agent.exceptions import ContentFilteredResponseError
from ferrule.agent.exceptions import EmptyResponseError
from ferrule.agent.exceptions import IncompleteToolCallError
from ferrule.agent.exceptions import OutputTruncatedError
from ferrule.agent.exceptions import UnexpectedModelBehavior
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart

pytestmark = pytest.mark.anyio


def noop() -> str:
    return "x"


def answering(*responses: ModelResponse) -> FunctionModel:
    queue = list(responses)

    def fn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return queue.pop(0)

    return FunctionModel(fn)


async def test_truncated_text_is_its_own_error() -> None:
    model = answering(ModelResponse(parts=[TextPart("half an ans")], finish_reason="length"))
    with pytest.raises(OutputTruncatedError, match="token limit") as info:
        await Agent(model).run("x")
    state = run_state_of(info.value)
    assert state is not None
    assert isinstance(state.messages[-1], ModelResponse)


async def test_truncated_tool_arguments_are_an_incomplete_call() -> None:
    model = answering(
        ModelResponse(
            parts=[ToolCallPart(tool_name="noop", args='{"a": "cut', tool_call_id="c")],
            finish_reason="length",
        )
    )
    with pytest.raises(IncompleteToolCallError, match="cut off"):
        await Agent(model, tools=[noop]).run("x")


async def test_incomplete_response_state_counts_as_truncation() -> None:
    model = answering(ModelResponse(parts=[TextPart("partial")], state="incomplete"))
    with pytest.raises(OutputTruncatedError):
        await Agent(model).run("x")


async def test_call_without_a_name_is_an_incomplete_call() -> None:
    model = answering(ModelResponse(parts=[ToolCallPart(tool_name="", args="{}", tool_call_id="c")]))
    with pytest.raises(IncompleteToolCallError, match="without a name"):
        await Agent(model, tools=[noop]).run("x")


async def test_content_filter_is_its_own_error() -> None:
    model = answering(
        ModelResponse(parts=[], finish_reason="content_filter", provider_details={"finish_reason": "SAFETY"})
    )
    with pytest.raises(ContentFilteredResponseError) as info:
        await Agent(model).run("x")
    assert info.value.body == {"finish_reason": "SAFETY"}


async def test_error_classes_are_distinct() -> None:
    classes = {
        OutputTruncatedError,
        IncompleteToolCallError,
        ContentFilteredResponseError,
        EmptyResponseError,
    }
    assert len(classes) == 4
    assert all(issubclass(c, UnexpectedModelBehavior) for c in classes)
    assert not any(issubclass(a, b) for a in classes for b in classes if a is not b)


async def test_thinking_only_response_is_empty() -> None:
    model = answering(ModelResponse(parts=[ThinkingPart("hmm")]), ModelResponse(parts=[ThinkingPart("hmm")]))
    with pytest.raises(EmptyResponseError, match="empty response"):
        await Agent(model, output_retries=1).run("x")


async def test_non_json_arguments_get_the_documented_prompt() -> None:
    model = answering(
        ModelResponse(parts=[ToolCallPart(tool_name="noop", args="{oops", tool_call_id="c")]),
        ModelResponse(parts=[TextPart("done")]),
    )
    result = await Agent(model, tools=[noop]).run("x")
    retry = result.all_messages()[2].parts[0]
    assert isinstance(retry, RetryPromptPart)
    assert isinstance(retry.content, str)
    assert retry.content.startswith("The arguments are not valid JSON")
    assert retry.model_response().endswith("Fix the errors and try again.")


async def test_oversized_arguments_are_rejected_before_the_tool_runs() -> None:
    huge = '{"q": "' + "x" * (1024 * 1024) + '"}'
    ran = False

    def search(q: str) -> str:
        nonlocal ran
        ran = True
        return q

    model = answering(
        ModelResponse(parts=[ToolCallPart(tool_name="search", args=huge, tool_call_id="c")]),
        ModelResponse(parts=[TextPart("done")]),
    )
    result = await Agent(model, tools=[search]).run("x")
    retry = result.all_messages()[2].parts[0]
    assert isinstance(retry, RetryPromptPart)
    assert "tool_arguments" in retry.content
    assert not ran
