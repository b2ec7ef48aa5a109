"""msgspec types of the GenerateContent response, as Gemini sends it (camelCase JSON).

Only the fields ferrule reads are declared; unknown fields are ignored so a new field in the API
never breaks decoding. Types are strict (a string where a number belongs is a decode error), and
token counts must be non-negative.
"""

from __future__ import annotations

from typing import Annotated
from typing import Any

import msgspec

_Count = Annotated[int, msgspec.Meta(ge=0)]


class _Wire(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class FunctionCall(_Wire):
    name: str = ""
    args: dict[str, Any] | None = None
    id: str | None = None


class Blob(_Wire):
    mime_type: str = ""
    data: str = ""


class FileData(_Wire):
    mime_type: str | None = None
    file_uri: str = ""


class ExecutableCode(_Wire):
    language: str | None = None
    code: str = ""
    id: str | None = None


class CodeExecutionResult(_Wire):
    outcome: str | None = None
    output: str | None = None
    id: str | None = None


class ToolCall(_Wire):
    id: str | None = None
    tool_type: str | None = None
    args: dict[str, Any] | None = None


class ToolResponse(_Wire):
    id: str | None = None
    tool_type: str | None = None
    response: dict[str, Any] | None = None


class Part(_Wire):
    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    function_call: FunctionCall | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    executable_code: ExecutableCode | None = None
    code_execution_result: CodeExecutionResult | None = None
    tool_call: ToolCall | None = None
    tool_response: ToolResponse | None = None


class Content(_Wire):
    role: str | None = None
    parts: list[Part] | None = None


class Candidate(_Wire):
    content: Content | None = None
    finish_reason: str | None = None
    finish_message: str | None = None
    index: _Count = 0
    safety_ratings: list[dict[str, Any]] | None = None
    grounding_metadata: dict[str, Any] | None = None
    url_context_metadata: dict[str, Any] | None = None
    citation_metadata: dict[str, Any] | None = None
    avg_logprobs: float | None = None
    logprobs_result: dict[str, Any] | None = None


class PromptFeedback(_Wire):
    block_reason: str | None = None
    block_reason_message: str | None = None
    safety_ratings: list[dict[str, Any]] | None = None


class ModalityCount(_Wire):
    modality: str = ""
    token_count: _Count = 0


class UsageMetadata(_Wire):
    prompt_token_count: _Count = 0
    candidates_token_count: _Count = 0
    total_token_count: _Count = 0
    cached_content_token_count: _Count = 0
    thoughts_token_count: _Count = 0
    tool_use_prompt_token_count: _Count = 0
    prompt_tokens_details: list[ModalityCount] | None = None
    cache_tokens_details: list[ModalityCount] | None = None
    candidates_tokens_details: list[ModalityCount] | None = None
    tool_use_prompt_tokens_details: list[ModalityCount] | None = None
    service_tier: str | None = None
    traffic_type: str | None = None


class Status(_Wire):
    code: int | None = None
    message: str | None = None
    status: str | None = None


class GenerateContentResponse(_Wire):
    candidates: list[Candidate] | None = None
    prompt_feedback: PromptFeedback | None = None
    usage_metadata: UsageMetadata | None = None
    model_version: str | None = None
    response_id: str | None = None
    create_time: str | None = None
    error: Status | None = None
