"""Start and stop llama.cpp's own OpenAI-compatible HTTP server, embedded through `xllamacpp`."""

from __future__ import annotations

import collections
import contextlib
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any
from typing import Final
from typing import Self

import anyio
import msgspec

from ferrule.core.errors import FerruleError
from ferrule.core.errors import UserError
from ferrule.core.install import install_hint
from ferrule.core.profile import ModelProfile
from ferrule.core.settings import ModelSettings
from ferrule.core.url_policy import UrlPolicy

from ._catalog import DEFAULT_MODEL
from ._catalog import LocalModel
from ._catalog import get_local_model
from ._fetch import ensure_model

if TYPE_CHECKING:
    from ferrule.providers.openai import OpenAIChatModel

__all__ = [
    "API_KEY_ENV",
    "THREADS_ENV",
    "XLLAMACPP_REQUIREMENT",
    "LlamaCppServer",
    "LlamaCppServerError",
    "MissingServerDependencyError",
    "default_threads",
    "local_model_profile",
]

XLLAMACPP_REQUIREMENT: Final = "xllamacpp==2026.10.11549"
"""The llama.cpp binding this package is tested with (the `[server]` extra)."""

THREADS_ENV: Final = "FERRULE_LLAMACPP_THREADS"
"""Environment variable overriding the default number of inference threads."""

API_KEY_ENV: Final = "FERRULE_LLAMACPP_API_KEY"
"""Environment variable a child server process reads its API key from (never its command line)."""

DEFAULT_CONTEXT_SIZE: Final = 8192
"""Default context window in tokens: enough for a tool loop, about 100-250 MB of KV cache."""

_STOP_TIMEOUT: Final = 15.0
_START_TIMEOUT: Final = 300.0


class LlamaCppServerError(FerruleError):
    """The embedded llama.cpp server could not be started (bad model file, bad parameter, crash)."""


class MissingServerDependencyError(UserError):
    """The `xllamacpp` binding is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "running a local model needs the llama.cpp binding: "
            + install_hint("ferrule-llamacpp[server]")
            + f" (or `pip install '{XLLAMACPP_REQUIREMENT}'`)"
        )


def default_threads() -> int:
    """Inference threads when none are given: `$FERRULE_LLAMACPP_THREADS`, else half the usable CPUs.

    Half, at least 1: llama.cpp threads spin while they wait, so a server that takes every core
    starves the application (and on a 2-core machine the agent loop itself needs one).
    """
    configured = os.environ.get(THREADS_ENV)
    if configured:
        try:
            value = int(configured)
        except ValueError:
            value = 0
        if value < 1:
            raise UserError(f"{THREADS_ENV}={configured!r} must be a whole number of threads, at least 1")
        return value
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return max(1, cpus // 2)


def local_model_profile(context_window: int | None = None) -> ModelProfile:
    """The profile of a small instruct model behind llama.cpp.

    Tools are emulated through constrained JSON output (small models answer tool requests in
    `content`, and llama.cpp enforces a JSON schema exactly), `tool_choice` is honoured by that
    emulation, JSON-object and JSON-schema output are native (grammar-constrained), and typed
    output defaults to the native mode. Input is text only; nothing else is declared.
    """
    return ModelProfile(
        supports_tools=False,
        tools_emulated_via_output=True,
        supports_tool_choice=True,
        supports_parallel_tool_calls=False,
        supports_instructions=True,
        supports_json_object_output=True,
        supports_json_schema_output=True,
        default_structured_output_mode="native",
        supported_settings=frozenset(
            {
                "max_tokens",
                "temperature",
                "top_p",
                "top_k",
                "seed",
                "stop_sequences",
                "presence_penalty",
                "frequency_penalty",
                "timeout",
                "extra_headers",
                "extra_body",
            }
        ),
        context_window=context_window,
    )


def import_xllamacpp() -> Any:
    """The llama.cpp binding, imported on first use; refuses with the install hint when it is absent."""
    try:
        import xllamacpp
    except ImportError:
        raise MissingServerDependencyError() from None
    return xllamacpp


def _apply_params(params: Any, values: Mapping[str, Any]) -> None:
    for dotted, value in values.items():
        *path, name = dotted.split(".")
        target = params
        for step in path:
            target = getattr(target, step, None)
            if target is None:
                raise UserError(f"unknown llama.cpp parameter {dotted!r} (see xllamacpp.CommonParams)")
        if not hasattr(target, name):
            raise UserError(f"unknown llama.cpp parameter {dotted!r} (see xllamacpp.CommonParams)")
        try:
            setattr(target, name, value)
        except (TypeError, ValueError, AttributeError) as exc:
            raise UserError(f"llama.cpp parameter {dotted!r} cannot be set to {value!r}: {exc}") from None


def build_params(
    xllamacpp: Any,
    model_path: Path,
    *,
    alias: str,
    threads: int,
    context_size: int,
    parallel: int,
    port: int,
    api_key: str | None,
    extra: Mapping[str, Any],
) -> Any:
    """The binding's `CommonParams` for serving `model_path` on loopback `port`, `extra` applied last."""
    params = xllamacpp.CommonParams()
    params.model.path = str(model_path)
    # Responses then name the model as the application does, not by a local file path.
    params.model_alias = {alias}
    # Never let llama.cpp fetch anything itself: the file is local and verified.
    params.offline = True
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.use_jinja = True
    params.n_ctx = context_size
    params.n_parallel = parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.verbosity = 0
    if api_key:
        params.api_keys = [api_key]
    _apply_params(params, extra)
    return params


class LlamaCppServer:
    """An embedded llama.cpp server for one local model, bound to 127.0.0.1 on a free port.

    Nothing happens on construction. Entering the context (`with` or `async with`) or calling
    `open()` fetches and verifies the model if needed (progress bar on stderr on the first run),
    loads it and starts llama.cpp's OpenAI-compatible HTTP server; leaving it or `close()` stops
    the server. `model()` hands back a Chat Completions model bound to it.

    ```python
    async with LlamaCppServer.start(model="qwen2.5-coder-0.5b") as server:
        agent = Agent(server.model(), tools=[...])
    ```

    By default the server runs inside this process (`in_process=True`), like SQLite; loading the
    model holds the GIL for a few seconds, so start it before serving traffic. With
    `in_process=False` it runs in a child Python process instead: loading never blocks this
    interpreter, a crash of the native code cannot take the application down, and the child exits
    on its own if this process dies. Each server gets a random API key, so other local programs
    (and web pages in a local browser) cannot use it.
    """

    def __init__(
        self,
        model: str | LocalModel | os.PathLike[str] = DEFAULT_MODEL,
        *,
        threads: int | None = None,
        context_size: int = DEFAULT_CONTEXT_SIZE,
        parallel: int = 1,
        in_process: bool = True,
        cache_dir: Path | None = None,
        progress: bool | None = None,
        params: Mapping[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        """Configure a server; see the class docs.

        `model` is a catalog name, a [`LocalModel`][ferrule.providers.llamacpp.LocalModel] or the
        path of a GGUF file of your own. `threads` defaults to
        [`default_threads()`][ferrule.providers.llamacpp.default_threads]; `parallel` is the number
        of requests served at once (each gets `context_size / parallel` tokens). `params` sets
        further `xllamacpp.CommonParams` fields by dotted name, e.g. `{"sampling.top_k": 40}`.
        `settings` become the default settings of every model from `model()`.
        """
        if isinstance(model, os.PathLike):
            self._local: LocalModel | None = None
            self._path: Path | None = Path(model).expanduser().resolve()
            self._name = self._path.stem
        else:
            self._local = get_local_model(model)
            self._path = None
            self._name = self._local.name
        if threads is not None and threads < 1:
            raise UserError(f"threads must be at least 1, got {threads}")
        if context_size < 256:
            raise UserError(f"context_size must be at least 256 tokens, got {context_size}")
        if parallel < 1:
            raise UserError(f"parallel must be at least 1, got {parallel}")
        self.threads: int = threads if threads is not None else default_threads()
        """Inference threads."""
        self.context_size: int = context_size
        """Context window of the server in tokens (shared by the parallel slots)."""
        self.parallel: int = parallel
        """Requests served at once."""
        self.in_process: bool = in_process
        """Whether the server runs in this process (else in a child process)."""
        self.settings: ModelSettings | None = settings
        """Default settings of the models handed out by `model()`."""
        self._cache_dir = cache_dir
        self._progress = progress
        self._params = dict(params or {})
        try:
            msgspec.json.encode(self._params)
        except (TypeError, msgspec.EncodeError):
            raise UserError(
                "params values must be plain JSON values (str, int, float, bool, lists)"
            ) from None
        self._api_key = secrets.token_urlsafe(24)
        self._lock = threading.Lock()
        self._server: Any = None
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._origin: str | None = None

    @classmethod
    def start(
        cls,
        model: str | LocalModel | os.PathLike[str] = DEFAULT_MODEL,
        **options: Any,
    ) -> LlamaCppServer:
        """A server to use as a context manager (`async with` or `with`); same arguments as the constructor."""
        return cls(model, **options)

    # -- state -------------------------------------------------------------------------------------

    @property
    def model_name(self) -> str:
        """The catalog name of the model (or the GGUF file's stem)."""
        return self._name

    @property
    def running(self) -> bool:
        """Whether the server is up."""
        return self._origin is not None

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:<port>`; raises if the server is not running."""
        if self._origin is None:
            raise UserError("the llama.cpp server is not running; use it as a context manager or call open()")
        return self._origin

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root, `http://127.0.0.1:<port>/v1`."""
        return f"{self.origin}/v1"

    @property
    def url_policy(self) -> UrlPolicy:
        """A URL policy allowing exactly this server's origin (plus the default public HTTPS)."""
        return UrlPolicy.local(self.origin)

    @property
    def api_key(self) -> str:
        """The random bearer token this server requires."""
        return self._api_key

    @property
    def pid(self) -> int | None:
        """The child process ID when `in_process=False` and running, else `None`."""
        return self._process.pid if self._process is not None else None

    @property
    def profile(self) -> ModelProfile:
        """The profile of models served here."""
        return local_model_profile(self.context_size // self.parallel)

    def __repr__(self) -> str:
        where = self._origin or "stopped"
        return f"LlamaCppServer({self._name!r}, {where}, threads={self.threads})"

    # -- lifecycle ---------------------------------------------------------------------------------

    def model_path(self) -> Path:
        """The GGUF file, fetching and verifying a catalog model first if needed (blocking)."""
        if self._path is not None:
            if not self._path.is_file():
                raise UserError(f"model file {str(self._path)!r} does not exist")
            return self._path
        assert self._local is not None
        return ensure_model(self._local, cache_dir=self._cache_dir, progress=self._progress)

    def open(self) -> Self:
        """Fetch the model if needed and start the server (blocking); a running server is left as is."""
        with self._lock:
            if self._origin is not None:
                return self
            path = self.model_path()
            if self.in_process:
                self._start_in_process(path)
            else:
                self._start_child(path)
        return self

    def close(self) -> None:
        """Stop the server (blocking); closing a stopped server does nothing."""
        with self._lock:
            self._origin = None
            server, self._server = self._server, None
            # The binding stops llama.cpp's threads when the last reference goes.
            del server
            process, self._process = self._process, None
            if process is not None:
                _stop_child(process)

    async def aopen(self) -> Self:
        """`open()` in a worker thread, so fetching the model does not block the event loop."""
        try:
            await anyio.to_thread.run_sync(self.open)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.close)
            raise
        return self

    async def aclose(self) -> None:
        """`close()` in a worker thread."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.close)

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return await self.aopen()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _start_in_process(self, path: Path) -> None:
        xllamacpp = import_xllamacpp()
        params = build_params(
            xllamacpp,
            path,
            alias=self._name,
            threads=self.threads,
            context_size=self.context_size,
            parallel=self.parallel,
            port=0,
            api_key=self._api_key,
            extra=self._params,
        )
        try:
            server = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise LlamaCppServerError(
                f"llama.cpp could not load {str(path)!r} ({exc}); check that it is a GGUF model and that "
                "context_size and params are valid"
            ) from None
        origin = str(server.listening_address).rstrip("/")
        try:
            wait_ready(origin, self._api_key)
        except LlamaCppServerError:
            del server
            raise
        self._server = server
        self._origin = origin

    def _start_child(self, path: Path) -> None:
        import_xllamacpp()  # fail here, with the install hint, rather than in the child
        command = [
            sys.executable,
            "-m",
            "ferrule.providers.llamacpp",
            "serve",
            "--model-path",
            str(path),
            "--alias",
            self._name,
            "--threads",
            str(self.threads),
            "--context-size",
            str(self.context_size),
            "--parallel",
            str(self.parallel),
            "--params-json",
            msgspec.json.encode(self._params).decode(),
            "--ready-json",
        ]
        env = {**os.environ, API_KEY_ENV: self._api_key}
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        assert process.stdout is not None
        assert process.stderr is not None
        _drain_in_background(process.stderr, self._stderr_tail, "ferrule-llamacpp-stderr")
        ready = _read_ready(process, _START_TIMEOUT)
        if ready is None:
            _stop_child(process)
            detail = "\n".join(self._stderr_tail) or "no output"
            raise LlamaCppServerError(
                f"the llama.cpp server process for {self._name} exited before it was ready "
                f"(exit code {process.returncode}):\n{detail}"
            )
        # Keep reading the child's stdout so a chatty native library can never fill the pipe and block it.
        _drain_in_background(process.stdout, self._stderr_tail, "ferrule-llamacpp-stdout")
        self._process = process
        self._origin = str(ready["origin"]).rstrip("/")

    # -- models ------------------------------------------------------------------------------------

    def model(self, *, settings: ModelSettings | None = None) -> OpenAIChatModel:
        """A Chat Completions model bound to this running server.

        Its provider is the llama.cpp-server compatible provider with this server's API key and a
        URL policy allowing exactly this server's origin; its profile is
        [`local_model_profile`][ferrule.providers.llamacpp.local_model_profile].
        """
        from ._binding import bind_model

        merged = settings if self.settings is None else self.settings.merge(settings)
        return bind_model(
            model_name=self.model_name,
            base_url=self.base_url,
            api_key=self.api_key,
            url_policy=self.url_policy,
            profile=self.profile,
            settings=merged,
        )


def wait_ready(origin: str, api_key: str | None, timeout: float = 60.0) -> None:
    """Block until the server answers `/slots`, which goes through its HTTP thread and main loop.

    Besides proving the server serves, this works around a race in the binding: a server
    destroyed before its loops have started can wait forever for them to stop.
    """
    request = urllib.request.Request(f"{origin}/slots")
    if api_key:
        request.add_header("authorization", f"Bearer {api_key}")
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                response.read()
            return
        except (OSError, urllib.error.URLError) as exc:
            if time.monotonic() > deadline:
                raise LlamaCppServerError(f"the llama.cpp server at {origin} did not answer: {exc}") from None
            time.sleep(0.05)


def _drain_in_background(stream: Any, tail: collections.deque[str], name: str) -> None:
    """Read `stream` to its end on the daemon thread `name`, keeping its last lines in `tail`."""

    def drain() -> None:
        with contextlib.suppress(OSError, ValueError):
            for raw in iter(stream.readline, b""):
                tail.append(raw.decode("utf-8", "replace").rstrip())

    threading.Thread(target=drain, name=name, daemon=True).start()


def _read_ready(process: subprocess.Popen[bytes], timeout: float) -> dict[str, Any] | None:
    """The child's ready line, or `None` when it exits (or stays silent past `timeout`) first."""
    assert process.stdout is not None
    result: list[dict[str, Any]] = []

    def read() -> None:
        with contextlib.suppress(OSError, ValueError):
            for raw in iter(process.stdout.readline, b""):  # type: ignore[union-attr]
                try:
                    message = msgspec.json.decode(raw)
                except msgspec.DecodeError:
                    continue
                if isinstance(message, dict) and "origin" in message:
                    result.append(message)  # pyright: ignore[reportUnknownArgumentType]
                    return

    reader = threading.Thread(target=read, name="ferrule-llamacpp-ready", daemon=True)
    reader.start()
    reader.join(timeout)
    if not result:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0)
        return None
    return result[0]


def _stop_child(process: subprocess.Popen[bytes]) -> None:
    """Ask the child to stop (closing its stdin), then kill it if it does not."""
    with contextlib.suppress(OSError):
        if process.stdin is not None:
            process.stdin.close()
    try:
        process.wait(timeout=_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for stream in (process.stdout, process.stderr):
        with contextlib.suppress(OSError):
            if stream is not None:
                stream.close()
