"""The part decisions every codec shares: which records are never sent, and the speech refusal reason."""

from __future__ import annotations

import typing
from typing import Any
from typing import cast

import pytest

from ferrule.core.codec_parts import UNTRANSCRIBED_SPEECH
from ferrule.core.codec_parts import ConfigRecordPart
from ferrule.core.codec_parts import never_sent
from ferrule.core.messages import CapabilityLoadDeltaPart
from ferrule.core.messages import InstructionBaselinePart
from ferrule.core.messages import InstructionDeltaPart
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import ModelSettingsDeltaPart
from ferrule.core.messages import ToolAvailabilityDeltaPart
from ferrule.core.messages import UserPromptPart

RECORDS: list[ConfigRecordPart] = [
    ToolAvailabilityDeltaPart(tools_added=["lookup"]),
    CapabilityLoadDeltaPart(loaded=["skill"]),
    ModelSettingsDeltaPart(settings={"temperature": 0.5}),
    InstructionDeltaPart(id="a", content="Be brief."),
    InstructionBaselinePart(instructions=[]),
]


def test_the_records_are_request_parts_and_every_kind_is_covered() -> None:
    kinds = set(typing.get_args(ConfigRecordPart))
    assert kinds <= set(typing.get_args(ModelRequestPart))
    assert {type(part) for part in RECORDS} == kinds


@pytest.mark.parametrize("part", RECORDS, ids=lambda p: type(p).__name__)
def test_never_sent_accepts_each_record(part: ConfigRecordPart) -> None:
    never_sent(part)


@pytest.mark.parametrize("other", [UserPromptPart(content="hi"), {"part_kind": "model-settings-delta"}])
def test_never_sent_refuses_anything_else_like_assert_never(other: Any) -> None:
    with pytest.raises(AssertionError, match="Expected code to be unreachable"):
        never_sent(cast("ConfigRecordPart", other))


def test_untranscribed_speech_says_what_to_do() -> None:
    assert "SpeechPart.transcript" in UNTRANSCRIBED_SPEECH
    assert "drop the part" in UNTRANSCRIBED_SPEECH
