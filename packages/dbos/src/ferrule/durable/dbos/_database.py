"""The database a durable run is checkpointed in: a SQLite file or a PostgreSQL database."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from ferrule.core.errors import UserError

__all__ = ["DatabaseUrl", "DatabaseUrlError", "database_url"]

_POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


class DatabaseUrlError(UserError):
    """A database URL ferrule-dbos cannot use; the message never repeats a password."""


class DatabaseUrl:
    """A checked database URL. `repr` and `redacted` hide any password; `url` is for DBOS only."""

    __slots__ = ("kind", "redacted", "url")

    def __init__(self, kind: Literal["sqlite", "postgres"], url: str, redacted: str) -> None:
        self.kind: Literal["sqlite", "postgres"] = kind
        """`sqlite` (one file, no server) or `postgres`."""
        self.url = url
        """The SQLAlchemy URL DBOS connects with (PostgreSQL through psycopg 3); may hold a password."""
        self.redacted = redacted
        """The URL with any password replaced by `***`, for messages and logs."""

    def __repr__(self) -> str:
        return f"DatabaseUrl({self.redacted!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatabaseUrl) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)


def database_url(value: str | os.PathLike[str]) -> DatabaseUrl:
    """Check a SQLite file path or a `sqlite:///` / `postgresql://` URL.

    A path (or a string without `://`) is a SQLite file; `postgres://` and `postgresql://` are
    PostgreSQL through psycopg 3 (`postgresql+psycopg://`). In-memory SQLite is refused: it would
    lose every checkpoint with the process. Any other scheme raises `DatabaseUrlError`.
    """
    text = os.fspath(value)
    if not text.strip():
        raise DatabaseUrlError(
            "the database URL is empty; give a SQLite file path or a postgresql://user@host/database URL"
        )
    if "://" not in text:
        return _sqlite_file(Path(text))
    # Imported here: SQLAlchemy costs a few hundred milliseconds, and DBOS needs it only when used.
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    scheme = text.split("://", 1)[0].lower()
    try:
        parsed = make_url(text)
    except (ArgumentError, ValueError):
        raise DatabaseUrlError(
            f"the database URL with scheme {scheme!r} is malformed; "
            "write sqlite:///path/to/file.sqlite or postgresql://user@host/database"
        ) from None
    redacted = parsed.render_as_string(hide_password=True)
    if scheme == "sqlite":
        if not parsed.database or parsed.database == ":memory:" or parsed.query.get("mode") == "memory":
            raise DatabaseUrlError(
                f"{redacted} is an in-memory SQLite database: its checkpoints would be lost with the "
                "process; give a file (sqlite:///path/to/file.sqlite)"
            )
        return _sqlite_file(Path(parsed.database))
    if scheme in _POSTGRES_SCHEMES:
        if not parsed.database:
            raise DatabaseUrlError(f"{redacted} names no database; add one: postgresql://user@host/database")
        normalized = parsed.set(drivername="postgresql+psycopg")
        return DatabaseUrl(
            "postgres",
            normalized.render_as_string(hide_password=False),
            normalized.render_as_string(hide_password=True),
        )
    raise DatabaseUrlError(
        f"ferrule-dbos does not run on {scheme!r} databases; use SQLite (a file path or "
        "sqlite:///path/to/file.sqlite) or PostgreSQL (postgresql://user@host/database)"
    )


def _sqlite_file(path: Path) -> DatabaseUrl:
    if str(path) in ("", ":memory:"):
        raise DatabaseUrlError(
            "an in-memory SQLite database: its checkpoints would be lost with the process; give a file path"
        )
    if path.is_dir():
        raise DatabaseUrlError(
            f"{path} is a folder; give the SQLite file's path (for example {path / 'agent.sqlite'})"
        )
    url = f"sqlite:///{path.absolute()}"
    return DatabaseUrl("sqlite", url, url)
