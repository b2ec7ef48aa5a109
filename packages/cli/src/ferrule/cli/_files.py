"""Files the command reads and writes: bounded reads, atomic writes, history and paused state."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from typing import BinaryIO

from ._exit import ConfigError
from ._exit import UsageError

if TYPE_CHECKING:
    from ferrule.core.messages import Message

__all__ = ["MAX_PROMPT_BYTES", "atomic_write", "load_history", "read_bounded", "read_prompt", "save_history"]

MAX_PROMPT_BYTES = 1024 * 1024
"""The most bytes `-` reads from standard input as the prompt; one more is a usage error (exit 2)."""


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """A file's bytes, refusing one larger than `limit` without reading it whole."""
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise ConfigError(f"the {what} {str(path)!r} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {str(path)!r}: {exc.strerror}") from None
    if len(data) > limit:
        raise ConfigError(f"the {what} {str(path)!r} is larger than the limit of {limit} bytes")
    return data


def read_prompt(stream: BinaryIO | None = None, limit: int = MAX_PROMPT_BYTES) -> str:
    """The prompt from standard input (`-`), at most `limit` bytes of UTF-8."""
    source = stream if stream is not None else sys.stdin.buffer
    data = source.read(limit + 1)
    if len(data) > limit:
        raise UsageError(f"the prompt on standard input is longer than the limit of {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the prompt on standard input is not UTF-8: {exc}") from None


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves the old file or the new one, never a part.

    The bytes go to a temporary file in the same directory, which is flushed and `fsync`ed, then
    renamed over `path`; the directory is `fsync`ed so the rename itself is durable.
    """
    directory = path.parent if str(path.parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise ConfigError(f"cannot write {str(path)!r}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise ConfigError(f"cannot write {str(path)!r}: {exc.strerror}") from None
    with contextlib.suppress(OSError):  # not every filesystem lets a directory be opened
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def load_history(path: Path) -> list[Message]:
    """The canonical history in `path` (ferrule's versioned document or PydanticAI's JSON list); a
    missing file is an empty history."""
    from ferrule.core import bounded_json
    from ferrule.core import history

    if not path.exists():
        return []
    data = read_bounded(path, bounded_json.HISTORY.max_bytes, "history file")
    try:
        return history.loads(data)
    except (history.HistoryError, bounded_json.JsonError) as exc:
        raise ConfigError(f"the history file {str(path)!r} is not a usable history: {exc}") from None


def save_history(path: Path, messages: list[Message]) -> None:
    """Write the canonical history atomically (see `atomic_write`)."""
    from ferrule.core import history

    atomic_write(path, history.dumps(messages))
