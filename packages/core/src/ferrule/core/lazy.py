"""Packages whose public names load on first use (PEP 562), so that importing them stays cheap.

```python
from ferrule.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from ._model import FooModel  # what type checkers and IDEs see

__all__ = ["FooModel"]
__getattr__ = lazy_getattr(__name__, {"FooModel": "_model"})
```
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package` that imports each lazily loaded name from its submodule.

    `where` maps every such name to the submodule that defines it, relative to `package` (e.g.
    `"_model"`). A name is imported on first access and then kept in the package's namespace, so
    later accesses cost nothing; any other name raises `AttributeError` as usual.
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        vars(sys.modules[package])[name] = value
        return value

    return __getattr__
