"""Fixtures of the ferrule-dbos tests: each durable test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from ferrule.durable.dbos import DatabaseUrl
from ferrule.durable.dbos import database_url
from tests.support.chat_server import chat_server
from tests.support.postgres import PostgresCluster
from tests.support.postgres import postgres_cluster

__all__ = ["chat_server", "database", "postgres_cluster"]

WORKERS = Path(__file__).resolve().parent / "workers"


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> DatabaseUrl:
    """A fresh, empty system database for one test: a SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        return database_url(tmp_path / "dbos.sqlite")
    cluster: PostgresCluster = request.getfixturevalue("postgres_cluster")
    # One database per test: DBOS creates it on launch; the name only has to be unused.
    return database_url(cluster.url(f"test_{uuid.uuid4().hex[:16]}"))
