"""Crash tests: worker processes a test starts, waits on, kills with SIGKILL and starts again.

A worker is a Python script run with this interpreter. It reports progress by printing lines on
stdout (`step-done 1`, `ready`, ...); the test waits for a line, then kills the process (nothing
of it runs after SIGKILL: no `finally`, no `atexit`, no flush) and starts a new one on the same
durable state. Everything the worker wrote to stderr is kept in a file and shown when it fails.

Tools in a worker record their side effects with `record_effect` in a file that outlives the
process (appended and fsynced before the tool returns), so a test counts each call exactly.
Waits are bounded safety nets, never assertions about speed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

__all__ = ["ROOT", "Worker", "WorkerFailed", "effects", "record_effect"]

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: on a worker's `PYTHONPATH`, so it can import `tests.support`."""

WAIT = 120.0
"""Seconds a test waits for a worker's line or exit before it fails (a safety net on a busy machine)."""


class WorkerFailed(AssertionError):
    """A worker exited, or did not print the awaited line in time; the message holds its stderr."""


class Worker:
    """One worker process: `python script args...` with `env` added to this process's environment."""

    def __init__(
        self, script: Path, args: Sequence[str], *, env: Mapping[str, str] | None = None, logs: Path
    ) -> None:
        self.script = script
        self.args = list(args)
        self.lines: list[str] = []
        """Every stdout line so far, without its newline."""
        logs.mkdir(parents=True, exist_ok=True)
        count = len(list(logs.glob(f"{script.stem}.*.stderr")))
        self.stderr_path = logs / f"{script.stem}.{count}.stderr"
        full_env = {**os.environ, **(env or {})}
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full_env.get("PYTHONPATH", "")) if p)
        full_env["PYTHONUNBUFFERED"] = "1"
        self._changed = threading.Condition()
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, str(script), *self.args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=full_env,
            cwd=ROOT,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for raw in stdout:
            with self._changed:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _failure(self, what: str) -> WorkerFailed:
        if not self._stderr.closed:  # a worker that timed out has been killed and reaped already
            self._stderr.flush()
        tail = self.stderr_path.read_text(encoding="utf-8", errors="replace")[-6000:]
        return WorkerFailed(
            f"worker {self.script.name} {' '.join(self.args)}: {what}\n"
            f"stdout: {self.lines[-20:]}\nstderr ({self.stderr_path}):\n{tail}"
        )

    def wait_for(self, prefix: str, timeout: float = WAIT) -> str:
        """The first stdout line starting with `prefix`, once printed; fails if the worker exits first."""
        with self._changed:
            ok = self._changed.wait_for(
                lambda: self._match(prefix) is not None or not self._reader.is_alive(), timeout
            )
            found = self._match(prefix)
        if found is not None:
            return found
        if not ok:
            raise self._failure(f"printed no line starting with {prefix!r} within {timeout:g} s")
        raise self._failure(f"exited with {self.process.wait()} before printing {prefix!r}")

    def _match(self, prefix: str) -> str | None:
        return next((line for line in self.lines if line.startswith(prefix)), None)

    def kill(self) -> None:
        """SIGKILL the worker and reap it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=WAIT)
        self._reader.join(timeout=WAIT)
        self._stderr.close()

    def terminate(self, timeout: float = WAIT) -> int:
        """SIGTERM the worker (it stops what it started) and reap it; SIGKILL if it does not exit."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise self._failure(f"did not stop within {timeout:g} s of SIGTERM") from None
        self._reader.join(timeout=WAIT)
        self._stderr.close()
        return code

    def killed_itself(self, timeout: float = WAIT) -> None:
        """Wait for a worker that SIGKILLs itself at its crash point to die, and reap it; fails,
        showing its stderr, if it exits any other way or not within `timeout`."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise self._failure(f"was not killed within {timeout:g} s") from None
        self.kill()
        if code != -signal.SIGKILL:
            raise self._failure(f"exited with {code}, not by SIGKILL")

    def finish(self, timeout: float = WAIT) -> list[str]:
        """Wait for the worker to exit 0 and return its stdout lines; a failure shows its stderr."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise self._failure(f"did not exit within {timeout:g} s") from None
        self._reader.join(timeout=WAIT)
        if code != 0:
            raise self._failure(f"exited with {code}")
        self._stderr.close()
        return self.lines

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def record_effect(log: Path, line: str) -> None:
    """Append one side-effect line to `log` and make it durable before returning (worker side)."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def effects(log: Path) -> list[str]:
    """The side-effect lines recorded so far (none when the log does not exist yet)."""
    if not log.exists():
        return []
    return log.read_text(encoding="utf-8").splitlines()
