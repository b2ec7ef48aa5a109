"""Vertex AI for ferrule: the `google-vertex:` entry point and its provider.

```python
from ferrule.providers.google import GoogleModel
from ferrule.providers.google.vertex import VertexAIProvider

model = GoogleModel(
    "gemini-2.5-flash",
    provider=VertexAIProvider(access_token=token, project="my-project", location="europe-west4"),
)
```
"""

from __future__ import annotations

from ._model import GoogleModel
from ._provider import VERTEX_TOKEN_VAR, VertexAIProvider, regional_api_base

__all__ = ["VERTEX_TOKEN_VAR", "VertexAIProvider", "infer_model", "regional_api_base"]


def infer_model(model_name: str) -> GoogleModel:
    """The `google-vertex:` entry point: credentials from `GOOGLE_CLOUD_ACCESS_TOKEN`, project and
    location from `GOOGLE_CLOUD_PROJECT` / `GOOGLE_CLOUD_LOCATION` (default `global`)."""
    return GoogleModel(model_name, provider=VertexAIProvider())
