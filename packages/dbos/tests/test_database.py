"""`database_url`: SQLite files and PostgreSQL URLs, everything else refused, passwords never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrule.durable.dbos import DatabaseUrlError
from ferrule.durable.dbos import database_url


def test_a_path_is_a_sqlite_file(tmp_path: Path) -> None:
    url = database_url(tmp_path / "agent.sqlite")
    assert url.kind == "sqlite"
    assert url.url == f"sqlite:///{tmp_path / 'agent.sqlite'}"
    assert database_url(f"sqlite:///{tmp_path / 'agent.sqlite'}") == url


def test_a_relative_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker started from another folder must find the same file.
    monkeypatch.chdir(tmp_path)
    assert database_url("agent.sqlite").url == f"sqlite:///{tmp_path / 'agent.sqlite'}"


@pytest.mark.parametrize("scheme", ["postgres", "postgresql", "postgresql+psycopg"])
def test_postgres_urls_use_psycopg(scheme: str) -> None:
    url = database_url(f"{scheme}://app@db.internal:5433/agents")
    assert url.kind == "postgres"
    assert url.url == "postgresql+psycopg://app@db.internal:5433/agents"


def test_the_repr_docs_durable_md_shows() -> None:
    shared = database_url("postgresql://app:secret@db.internal/agents")
    assert str(shared) == "DatabaseUrl('postgresql+psycopg://app:***@db.internal/agents')"


def test_the_password_is_hidden_everywhere_but_url() -> None:
    url = database_url("postgresql://app:s3cret-pw@db.internal/agents")
    assert "s3cret-pw" in url.url
    assert "s3cret-pw" not in repr(url)
    assert "s3cret-pw" not in url.redacted
    with pytest.raises(DatabaseUrlError) as caught:
        database_url("postgresql://app:s3cret-pw@db.internal")
    assert "s3cret-pw" not in str(caught.value)
    assert "names no database" in str(caught.value)


@pytest.mark.parametrize("value", ["sqlite://", "sqlite:///:memory:", ":memory:"])
def test_in_memory_sqlite_is_refused(value: str) -> None:
    with pytest.raises(DatabaseUrlError, match="lost with the process"):
        database_url(value)


def test_an_empty_url_is_refused() -> None:
    with pytest.raises(DatabaseUrlError, match="is empty"):
        database_url(" ")


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatabaseUrlError, match="is a folder"):
        database_url(tmp_path)


@pytest.mark.parametrize("value", ["mysql://u:pw@h/db", "redis://h:6379", "mssql+pyodbc://h/db"])
def test_other_databases_are_refused_with_what_to_use(value: str) -> None:
    with pytest.raises(DatabaseUrlError, match=r"use SQLite .* or PostgreSQL") as caught:
        database_url(value)
    assert "pw" not in str(caught.value)
