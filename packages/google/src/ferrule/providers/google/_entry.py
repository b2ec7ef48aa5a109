"""The entry points of this package: `google-gla:` and `gemini:` (the Gemini API), `google-vertex:` (Vertex AI).

Each entry point of group `ferrule.providers` names the function of this module spelled like its
prefix (`google-vertex` → `ferrule.providers.google._entry:google_vertex`).
"""

from __future__ import annotations

from ._model import GoogleModel
from ._provider import VertexAIProvider

__all__ = ["gemini", "google_gla", "google_vertex", "infer_model"]


def google_gla(model_name: str) -> GoogleModel:
    """`google-gla:<model>`: a Gemini API model, keyed from `GEMINI_API_KEY` / `GOOGLE_API_KEY`."""
    return GoogleModel(model_name)


gemini = google_gla
"""`gemini:<model>`: the same as `google-gla:<model>`."""

infer_model = google_gla
"""`google_gla` under its public name, `ferrule.providers.google.infer_model`."""


def google_vertex(model_name: str) -> GoogleModel:
    """`google-vertex:<model>`: credentials from `GOOGLE_CLOUD_ACCESS_TOKEN`, project and location from
    `GOOGLE_CLOUD_PROJECT` / `GOOGLE_CLOUD_LOCATION` (default `global`)."""
    return GoogleModel(model_name, provider=VertexAIProvider())
