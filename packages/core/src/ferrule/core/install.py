"""How an error message tells the user to install a ferrule distribution they do not have.

ferrule's distributions are not on a package index yet, so `pip install ferrule-…` would find
nothing, or worse, a name somebody else registered. Every message that suggests an install comes
from `install_hint`, so that the advice changes in one place once the names are published.
"""

from __future__ import annotations

from typing import Final

__all__ = ["INSTALL_TOOL", "install_hint"]

INSTALL_TOOL: Final = "python tools/install.py"
"""The command, run in a checkout of ferrule, that installs distributions from their folders."""


def install_hint(*requirements: str) -> str:
    """The install advice for `requirements` (e.g. `"ferrule-ui[server]"`), ready to quote in a message.

    Third-party requirements (no `ferrule` prefix) are named for pip; ferrule's own are named for
    the checkout's install tool.
    """
    ours = [r for r in requirements if r.startswith("ferrule")]
    theirs = [r for r in requirements if not r.startswith("ferrule")]
    parts: list[str] = []
    if ours:
        names = " ".join(f"'{r}'" for r in ours)
        parts.append(f"`{INSTALL_TOOL} {names}` in a checkout of ferrule (not on PyPI yet)")
    if theirs:
        parts.append("`pip install " + " ".join(f"'{r}'" for r in theirs) + "`")
    return " and ".join(parts)
