"""The `ferrule` command (`ferrule-cli`).

```sh
ferrule run --model llamacpp:qwen2.5-coder-0.5b "Say hello"     # no API key: the embedded local model
ferrule --model openai:gpt-5-mini --json "Summarize" < notes.txt
ferrule chat --model anthropic:claude-sonnet-4-5
```

`main(argv)` runs the command line and returns its exit code (`ExitCode`). `model_resolver` is the
`ferrule.agent.spec.ModelResolver` the command uses: the provider entry points, plus `api_key_env`
and `base_url` for the providers it knows how to configure. Nothing heavy is imported until a
subcommand runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from ._exit import ExitCode
from ._main import main

if TYPE_CHECKING:
    from ._resolvers import model_resolver

__version__ = "0.1.0"

__all__ = ["ExitCode", "main", "model_resolver", "__version__"]


def __getattr__(name: str) -> Any:
    # The resolver imports the agent and providers; `import ferrule.cli` should not.
    if name == "model_resolver":
        from ._resolvers import model_resolver

        return model_resolver
    raise AttributeError(f"module 'ferrule.cli' has no attribute {name!r}")
