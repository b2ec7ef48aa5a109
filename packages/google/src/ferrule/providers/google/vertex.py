"""Vertex AI for ferrule: its provider, and `infer_model`, the `google-vertex:` entry point's function.

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

from ._entry import google_vertex as infer_model
from ._provider import VERTEX_TOKEN_VAR
from ._provider import VertexAIProvider
from ._provider import regional_api_base

__all__ = ["VERTEX_TOKEN_VAR", "VertexAIProvider", "infer_model", "regional_api_base"]
