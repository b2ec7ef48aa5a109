"""What every provider codec decides the same way about message parts, given one home.

A codec matches every part kind exhaustively; the decisions below are not the provider's to make,
so each codec takes them from here rather than restating them, and a new record kind added to
[`ConfigRecordPart`][ferrule.core.codec_parts.ConfigRecordPart] reaches every codec at once:

```python
match part:
    case UserPromptPart():
        ...
    case _:
        never_sent(part)  # type-checks only when the records are all that is left
```
"""

from __future__ import annotations

from typing import Final
from typing import Never
from typing import TypeAlias
from typing import assert_never
from typing import cast

from .messages import CapabilityLoadDeltaPart
from .messages import InstructionBaselinePart
from .messages import InstructionDeltaPart
from .messages import ModelSettingsDeltaPart
from .messages import ToolAvailabilityDeltaPart

__all__ = ["UNTRANSCRIBED_SPEECH", "ConfigRecordPart", "never_sent"]

ConfigRecordPart: TypeAlias = (
    ToolAvailabilityDeltaPart
    | CapabilityLoadDeltaPart
    | ModelSettingsDeltaPart
    | InstructionDeltaPart
    | InstructionBaselinePart
)
"""The request parts that record how the call's configuration changed (tools revealed, capabilities
loaded, settings and instructions changed). No codec sends them: the
[`ModelCall`][ferrule.core.model.ModelCall] itself carries the configuration in force."""

_CONFIG_RECORD_TYPES: Final = frozenset(
    {
        ToolAvailabilityDeltaPart,
        CapabilityLoadDeltaPart,
        ModelSettingsDeltaPart,
        InstructionDeltaPart,
        InstructionBaselinePart,
    }
)

UNTRANSCRIBED_SPEECH: Final = (
    "the model's spoken answer has no transcript, and earlier model turns are sent as text; "
    "transcribe the audio into SpeechPart.transcript or drop the part"
)
"""Why a model's [`SpeechPart`][ferrule.core.messages.SpeechPart] without a transcript cannot be
replayed to a provider that takes earlier model turns as text (the refusal's reason)."""


def never_sent(part: ConfigRecordPart) -> None:
    """Leave a configuration record out of the request: the last case of a codec's exhaustive `match`.

    The type checker accepts the call only where every other part kind has been matched, as it
    would `assert_never`; at run time anything else (an object that is no part) raises
    `assert_never`'s `AssertionError`.
    """
    if type(part) not in _CONFIG_RECORD_TYPES:
        assert_never(cast("Never", part))  # an ill-typed caller: fail exactly as the codec's match did
