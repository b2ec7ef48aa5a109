"""The protocols' `app` entry points, which import Starlette (the `ferrule-ui[server]` extra) only when called."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ferrule.core.install import install_hint

__all__ = ["server_app"]


def server_app(package: str, serves: str) -> Callable[..., Any]:
    """`package`'s `app(agent, **options)`, building the app of `package._app` when it is called."""

    def app(agent: Any, **options: Any) -> Any:
        try:
            build = importlib.import_module(f"{package}._app").app
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ImportError(
                f"{package}.app needs Starlette: " + install_hint("ferrule-ui[server]")
            ) from exc
        return build(agent, **options)

    app.__module__, app.__qualname__ = package, "app"
    app.__doc__ = (
        f"An ASGI app serving `agent` to {serves}; the options are those of `_app.app`.\n\n"
        "Raises `ImportError` naming the extra to install when Starlette is missing."
    )
    return app
