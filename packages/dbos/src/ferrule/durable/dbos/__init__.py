"""Durable ferrule agent runs on DBOS (https://docs.dbos.dev): the run is a DBOS workflow and each
model request, tool call and MCP call one of its steps, checkpointed in DBOS's system database.

SQLite is the embedded default (a file, no server); the same code runs on PostgreSQL when the
database URL says so:

```python
from ferrule.durable.dbos import database_url

database_url("agent.sqlite")                          # SQLite file beside the program
database_url("postgresql://app@db.internal/agents")   # PostgreSQL (psycopg 3)
```

`docs/durable.md` explains when to choose DBOS or Temporal and how to move from SQLite to PostgreSQL.
"""

from __future__ import annotations

from ._agent import DBOSAgent
from ._agent import DBOSSteps
from ._agent import PendingApproval
from ._database import DatabaseUrl
from ._database import DatabaseUrlError
from ._database import database_url

__version__ = "0.1.0"

__all__ = [
    "DBOSAgent",
    "DBOSSteps",
    "DatabaseUrl",
    "DatabaseUrlError",
    "PendingApproval",
    "__version__",
    "database_url",
]
