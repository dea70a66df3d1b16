"""``memstream gateway`` and ``memstream mcp``: the doors as processes, against any stack.

Both find the stack like every other command (the settings, else ``DATA_DIR/stack.json``).
The gateway prints one ready line with its address once it listens; ``mcp`` speaks MCP on
stdin/stdout (nothing else is written there) with the credential of ``MEMSTREAM_KEY``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from memstream.gateway.service import Doors
from memstream.ops.stack import StackError, port_is_free, resolve_settings
from memstream.services.settings import Settings

CREDENTIAL_VARIABLE = "MEMSTREAM_KEY"


def url_of(host: str, port: int) -> str:
    return f"http://{host}:{port}"


def gateway(settings: Settings, *, host: str, port: int) -> int:
    import uvicorn

    from memstream.gateway.app import create_app

    resolved = resolve_settings(settings)
    if not port_is_free(port, host):
        raise StackError(
            "gateway",
            f"port {port} on {host} is already in use",
            "stop what uses it, or pass --port / set MEMSTREAM_GATEWAY_PORT to a free port",
        )
    doors = Doors(resolved)
    # No access log at any level: /ui/login carries a credential in its query string.
    config = uvicorn.Config(
        create_app(doors),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
    )
    server = uvicorn.Server(config)

    async def serve() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():  # noqa: ASYNC110 - uvicorn has no event
            await asyncio.sleep(0.05)
        if server.started:
            print(f"memstream gateway ready on {url_of(host, port)}", flush=True)
        await task

    asyncio.run(serve())
    return 0 if server.started else 1


def mcp_stdio(settings: Settings) -> int:
    from memstream.gateway.mcp import run_stdio

    logging.getLogger().handlers[:] = [logging.StreamHandler(sys.stderr)]
    resolved = resolve_settings(settings)
    doors = Doors(resolved)
    asyncio.run(run_stdio(doors, resolved.key or os.environ.get(CREDENTIAL_VARIABLE)))
    return 0
