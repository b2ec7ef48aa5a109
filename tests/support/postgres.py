"""A throwaway PostgreSQL cluster for tests: Debian's `postgresql` server binaries, a temporary data
folder, a unix socket in that folder and no TCP listener.

The session-scoped `postgres_cluster` fixture starts one cluster for the whole test session and
stops it (and removes its folder) at the end. A package's `conftest.py` makes it available with
`from tests.support.postgres import postgres_cluster`.

PostgreSQL refuses to run as root; when the tests run as root (as CI does), the server commands run
as the `postgres` user that Debian's package creates. Outside CI a machine without the server skips
the tests that need it; under CI (`tests.support.shared.in_ci`) that is a failure, because CI
installs the server from `.ci/apt.txt`.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Generator
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.shared import in_ci

__all__ = ["PostgresCluster", "find_server", "postgres_cluster", "running_cluster"]

SERVER_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin")
"""Where Debian's `postgresql-<major>` packages put `initdb`, `pg_ctl` and `postgres`."""


def find_server() -> Path | None:
    """The folder holding `initdb` and `pg_ctl`, or `None` when no PostgreSQL server is installed."""
    for folder in SERVER_DIRS:
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


@dataclass(frozen=True)
class PostgresCluster:
    """A running cluster: connect through the unix socket in `socket_dir` as the `postgres` role."""

    bin_dir: Path
    data_dir: Path
    socket_dir: Path
    user: str | None
    """The OS user the server runs as (`None`: the current one)."""

    def url(self, database: str, driver: str = "postgresql+psycopg") -> str:
        """A SQLAlchemy URL of `database` on this cluster (DBOS creates a missing database itself)."""
        return f"{driver}://postgres@/{database}?host={self.socket_dir}"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run one of the server's commands (`initdb`, `pg_ctl`, `psql`, ...) as the server's user."""
        command = [str(self.bin_dir / args[0]), *args[1:]]
        return subprocess.run(
            command,
            user=self.user,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            cwd=self.socket_dir,
        )

    def sql(self, database: str, statement: str) -> str:
        """Run one statement with `psql` and return its unaligned, tuples-only output."""
        psql = shutil.which("psql") or str(self.bin_dir / "psql")
        result = subprocess.run(
            [psql, "-h", str(self.socket_dir), "-U", "postgres", "-d", database, "-At", "-c", statement],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return result.stdout


@contextlib.contextmanager
def running_cluster(bin_dir: Path) -> Generator[PostgresCluster]:
    """Create, start and finally stop and remove a cluster in a new temporary folder."""
    user = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="ferrule-pg-"))
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    cluster = PostgresCluster(bin_dir=bin_dir, data_dir=root / "data", socket_dir=root, user=user)
    started = False
    try:
        # trust on the socket only (no TCP listener at all); fsync off: the data is thrown away.
        cluster.run(
            "initdb", "-D", str(cluster.data_dir), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"
        )
        options = f"-k {root} -c listen_addresses= -F -c max_connections=50"
        cluster.run(
            "pg_ctl",
            "-D",
            str(cluster.data_dir),
            "-o",
            options,
            "-l",
            str(root / "server.log"),
            "-w",
            "start",
        )
        started = True
        yield cluster
    finally:
        if started:
            with contextlib.suppress(subprocess.SubprocessError):
                cluster.run("pg_ctl", "-D", str(cluster.data_dir), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One PostgreSQL cluster for the test session, stopped at its end."""
    bin_dir = find_server()
    if bin_dir is None:
        reason = f"no PostgreSQL server in {', '.join(SERVER_DIRS)} (Debian's postgresql package)"
        if in_ci():
            pytest.fail(f"{reason}; CI installs it from .ci/apt.txt, so the tests that need it must run")
        pytest.skip(reason)
    with running_cluster(bin_dir) as cluster:
        yield cluster
