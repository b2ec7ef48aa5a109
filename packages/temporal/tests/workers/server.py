"""A Temporal server for the tests, in its own process: `python server.py local|time-skipping`.

Prints `address <host:port>` once the server accepts clients and stops it on SIGTERM. The test
process itself never holds a Temporal client: the SDK's native runtime can abort the interpreter
at exit (temporalio/sdk-python#300), so every process that connects ends with `os._exit`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from ferrule.durable.temporal.testing import start_local
from ferrule.durable.temporal.testing import start_time_skipping


async def main(kind: str) -> None:
    env = await (start_local() if kind == "local" else start_time_skipping())
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print(f"address {env.client.service_client.config.target_host}", flush=True)
    await stop.wait()
    await env.shutdown()


asyncio.run(main(sys.argv[1]))
sys.stdout.flush()
os._exit(0)
