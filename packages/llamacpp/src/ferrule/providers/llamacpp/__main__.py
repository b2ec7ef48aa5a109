"""`python -m ferrule.providers.llamacpp`: list, fetch and serve local models.

```
python -m ferrule.providers.llamacpp list
python -m ferrule.providers.llamacpp fetch [--model NAME] [--verify]
python -m ferrule.providers.llamacpp serve [--model NAME | --model-path FILE] [--threads N] ...
```

`serve` runs llama.cpp's OpenAI-compatible server on 127.0.0.1 until interrupted or until its
standard input closes (so a parent process that dies takes it down too). It requires a bearer
token: `$FERRULE_LLAMACPP_API_KEY`, or a random one it prints.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import msgspec

from ferrule.core.errors import FerruleError

from ._catalog import CATALOG
from ._catalog import DEFAULT_MODEL
from ._fetch import cached_model_path
from ._fetch import ensure_model
from ._server import API_KEY_ENV
from ._server import DEFAULT_CONTEXT_SIZE
from ._server import build_params
from ._server import default_threads
from ._server import import_xllamacpp
from ._server import wait_ready


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ferrule.providers.llamacpp", description="List, fetch and serve local models."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="show the catalog and what is cached")
    fetch = commands.add_parser("fetch", help="download and verify a model into the cache")
    fetch.add_argument("--model", default=DEFAULT_MODEL, choices=sorted(CATALOG))
    fetch.add_argument("--verify", action="store_true", help="re-hash a cached file")
    serve = commands.add_parser("serve", help="serve a model on 127.0.0.1")
    which = serve.add_mutually_exclusive_group()
    which.add_argument("--model", default=DEFAULT_MODEL, choices=sorted(CATALOG))
    which.add_argument("--model-path", type=Path, help="a GGUF file of your own")
    serve.add_argument("--alias", default=None, help="the model name the server reports")
    serve.add_argument("--threads", type=int, default=None)
    serve.add_argument("--context-size", type=int, default=DEFAULT_CONTEXT_SIZE)
    serve.add_argument("--parallel", type=int, default=1)
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port")
    serve.add_argument("--params-json", default="{}", help="further CommonParams fields by dotted name")
    serve.add_argument(
        "--ready-json", action="store_true", help="print one JSON line when ready (for parents)"
    )
    return parser


def _list() -> int:
    for model in CATALOG.values():
        state = "cached" if cached_model_path(model) is not None else "not fetched"
        default = " (default)" if model.name == DEFAULT_MODEL else ""
        print(f"{model.name}{default}: {model.description} [{state}]")
    return 0


def _serve(args: argparse.Namespace) -> int:
    xllamacpp = import_xllamacpp()
    path: Path = args.model_path or ensure_model(args.model)
    api_key = os.environ.get(API_KEY_ENV)
    generated = not api_key
    if not api_key:
        api_key = secrets.token_urlsafe(24)
    extra: Any = msgspec.json.decode(args.params_json)
    if not isinstance(extra, dict):
        raise SystemExit("--params-json must be a JSON object")
    params = build_params(
        xllamacpp,
        path,
        alias=args.alias or (path.stem if args.model_path else args.model),
        threads=args.threads or default_threads(),
        context_size=args.context_size,
        parallel=args.parallel,
        port=args.port,
        api_key=api_key,
        extra=extra,  # pyright: ignore[reportUnknownArgumentType]
    )
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as exc:
        print(f"llama.cpp could not load {path}: {exc}", file=sys.stderr)
        return 1
    origin = str(server.listening_address).rstrip("/")
    wait_ready(origin, api_key)
    if args.ready_json:
        ready: dict[str, Any] = {"origin": origin, "pid": os.getpid()}
        if generated:
            ready["api_key"] = api_key
        sys.stdout.write(msgspec.json.encode(ready).decode() + "\n")
    else:
        print(f"serving {path.name} at {origin}/v1 (Ctrl-C to stop)")
        if generated:
            print(f"API key: {api_key}")
    sys.stdout.flush()

    stop = threading.Event()

    def watch_stdin() -> None:
        # EOF on stdin means the parent closed it (or died): time to go.
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        stop.set()

    if args.ready_json:
        threading.Thread(target=watch_stdin, daemon=True).start()

    def on_signal(signum: int, frame: object) -> None:
        del signum, frame
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    while not stop.wait(0.5):
        pass
    del server
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            return _list()
        if args.command == "fetch":
            path = ensure_model(args.model, verify=args.verify)
            print(path)
            return 0
        return _serve(args)
    except FerruleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
