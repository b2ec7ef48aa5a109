"""`ferrule models [PROVIDER]`: the installed providers, or the models a provider lists."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points
from typing import Any

import anyio
import msgspec

from ._exit import ExitCode
from ._exit import UsageError

__all__ = ["models_command"]


def _installed() -> list[tuple[str, str]]:
    """`(prefix, distribution)` of every provider entry point, plus the built-in `test`."""
    from ferrule.agent.models import ENTRY_POINT_GROUP

    found: dict[str, str] = {"test": "ferrule-agent"}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.dist.name if ep.dist is not None else "?")
    return sorted(found.items())


def _model_id(entry: Any) -> str:
    for attribute in ("id", "name", "model_id"):
        value = getattr(entry, attribute, None)
        if isinstance(value, str) and value:
            return value
    return str(entry)


async def _discover(provider_name: str, args: argparse.Namespace) -> list[str]:
    from ferrule.agent.spec import ModelRef

    from ._resolvers import model_resolver

    ref = ModelRef(
        provider=provider_name,
        name="discovery",
        api_key_env=args.api_key_env,
        base_url=args.base_url,
        allow_local_url=args.allow_local_url,
    )
    env: dict[str, str] = {}
    if args.api_key_env:
        import os

        if args.api_key_env not in os.environ:
            from ._exit import CredentialError

            raise CredentialError(f"{args.api_key_env} is not set")
        env[args.api_key_env] = os.environ[args.api_key_env]
    if provider_name == "llamacpp":
        from ferrule.providers.llamacpp import CATALOG
        from ferrule.providers.llamacpp import cached_model_path

        return [
            f"{name}{'  (cached)' if cached_model_path(model) else ''}" for name, model in CATALOG.items()
        ]
    model = model_resolver(ref, env)
    provider = getattr(model, "provider", None)
    lister = getattr(provider, "list_models", None)
    if lister is None:
        raise UsageError(f"the {provider_name!r} provider offers no model discovery")
    try:
        listed = await lister()
    finally:
        closer = getattr(provider, "aclose", None)
        if closer is not None:
            await closer()
    entries: Any = getattr(listed, "models", listed)
    return sorted(_model_id(entry) for entry in entries)


def models_command(args: argparse.Namespace) -> int:
    """`ferrule models`; returns the exit code."""
    from ._run import report

    out = sys.stdout
    try:
        if args.provider_name is None:
            installed = _installed()
            if args.json:
                document = [{"prefix": prefix, "distribution": dist} for prefix, dist in installed]
                out.write(msgspec.json.encode(document).decode() + "\n")
            else:
                width = max(len(prefix) for prefix, _ in installed)
                for prefix, dist in installed:
                    out.write(f"{prefix:<{width}}  {dist}\n")
            return int(ExitCode.OK)
        known = {prefix for prefix, _ in _installed()}
        if args.provider_name not in known:
            raise UsageError(
                f"no installed provider {args.provider_name!r}; installed: {', '.join(sorted(known))}"
            )
        if args.provider_name == "test":
            raise UsageError("the 'test' provider takes any model name; it lists none")
        names = anyio.run(_discover, args.provider_name, args)
        if args.json:
            out.write(msgspec.json.encode(names).decode() + "\n")
        else:
            out.writelines(f"{name}\n" for name in names)
        return int(ExitCode.OK)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:
        return report(exc, None, sys.stderr)
