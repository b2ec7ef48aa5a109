"""The entry point of this package: `foo:<model>` (`Agent("foo:foo-1")`).

The pyproject's `[project.entry-points."ferrule.providers"]` names the function of this module
spelled like the prefix; it takes the model name and returns the model, its credential read from
the environment.
"""

from __future__ import annotations

from ._model import FooModel

__all__ = ["foo"]


def foo(model_name: str) -> FooModel:
    """`foo:<model>`: a Foo model keyed from `FOO_API_KEY`."""
    return FooModel(model_name)
