"""What importing a module loads: for the tests that keep `import ferrule.<package>` cheap."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable

__all__ = ["loaded_by"]


def loaded_by(statement: str, modules: Iterable[str]) -> list[str]:
    """The `modules` a fresh interpreter holds in `sys.modules` after running `statement`."""
    names = tuple(modules)
    code = f"import sys\n{statement}\nprint(','.join(m for m in {names!r} if m in sys.modules))\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [name for name in result.stdout.strip().split(",") if name]
