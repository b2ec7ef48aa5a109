"""`FooModel`: the Foo codec sent through a `FooProvider`."""

from __future__ import annotations

from ferrule.core.codec import CodecModel
from ferrule.core.profile import ModelProfile
from ferrule.core.provider import QueryParams
from ferrule.core.settings import ModelSettings

from ._provider import FooProvider
from .codec import FooCodec
from .profiles import foo_profile

__all__ = ["FooModel"]


class FooModel(CodecModel[FooProvider]):
    """A Foo model, buffered (`request`) and streamed (`stream`).

    `CodecModel` does the work: it checks each call against `profile` before any I/O, encodes it
    with `codec()`, sends it through the provider to `_endpoint`, decodes the answer and keeps the
    stream contract (one `ResponseCompleted`, last).
    """

    def __init__(
        self,
        model_name: str,
        *,
        provider: FooProvider | None = None,
        profile: ModelProfile | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        super().__init__(
            model_name, provider=provider if provider is not None else FooProvider(), settings=settings
        )
        self._profile = profile if profile is not None else foo_profile(model_name)

    @property
    def profile(self) -> ModelProfile:
        """What this model supports; a call asking for more fails before any I/O."""
        return self._profile

    def codec(self) -> FooCodec:
        """The codec of this model's requests."""
        return FooCodec(model_name=self.model_name, provider_url=self.provider.base_url)

    def _endpoint(self, *, stream: bool) -> tuple[str, QueryParams | None]:
        return ("/generate/stream" if stream else "/generate"), None
