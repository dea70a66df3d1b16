"""``memstream gateway`` and ``memstream mcp``: the doors as processes, against any stack.

Both find the stack like every other command (the settings, else ``DATA_DIR/stack.json``).
The gateway prints one ready line with its address once it listens, then one access-log line
per request (no URL carries a credential; ``AccessRedaction`` masks any that a caller put in a
query string anyway, and the one-page link codes); ``mcp`` speaks MCP on stdin/stdout (nothing
else is written there) with the credential of ``MEMSTREAM_KEY``. ``memstream ui-link`` asks a
running gateway for a one-page link to a timeline page.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import urllib.error
import urllib.request

from memstream.gateway.service import Doors
from memstream.ops.stack import StackError, port_is_free, resolve_settings
from memstream.services.settings import Settings

CREDENTIAL_VARIABLE = "MEMSTREAM_KEY"


def url_of(host: str, port: int) -> str:
    return f"http://{host}:{port}"


class AccessRedaction(logging.Filter):
    """Masks secrets in access-log lines: the value of a query parameter that names a secret
    (``credential``, ``key``, ``token``, ``secret``, ``password``) and a one-page link's code."""

    SECRET_PARAM = re.compile(r"((?:^|[?&])(?:credential|key|token|secret|password)=)[^&\s]*", re.I)
    LINK = re.compile(r"(/ui/open/)[^?\s]+")

    def redact(self, text: str) -> str:
        return self.LINK.sub(r"\1…", self.SECRET_PARAM.sub(r"\1…", text))

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(self.redact(a) if isinstance(a, str) else a for a in record.args)
        return True


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
    config = uvicorn.Config(
        create_app(doors), host=host, port=port, log_level="warning", lifespan="on"
    )
    access = logging.getLogger("uvicorn.access")  # warnings only, except one line a request
    access.setLevel(logging.INFO)
    access.addFilter(AccessRedaction())
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


def ui_link(settings: Settings, page: str, *, url: str, key: str | None, tenant: str | None) -> int:
    """Print a one-page link to ``page`` minted by the gateway at ``url`` (good once, for a
    minute); the credential goes in a header, never in the link."""
    from memstream.ops.identity import CredentialsMissing, credential_for

    try:
        credential = credential_for(settings, "agent", key, tenant)
    except CredentialsMissing as exc:
        print(f"memstream: ui-link: {exc}", file=sys.stderr)
        return 2
    if not url.startswith(("http://", "https://")):
        print(f"memstream: ui-link: --url {url!r} is not an http(s) address", file=sys.stderr)
        return 2
    request = urllib.request.Request(  # noqa: S310 - http(s) only, checked above
        f"{url.rstrip('/')}/ui/links",
        data=json.dumps({"page": page}).encode(),
        headers={"Authorization": f"Bearer {credential}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - checked above
            minted = json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        print(f"memstream: ui-link: the gateway at {url} answered {exc.code}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(
            f"memstream: ui-link: no gateway at {url} ({exc}); start one with "
            "`memstream gateway`, or pass --url",
            file=sys.stderr,
        )
        return 1
    print(f"{url.rstrip('/')}{minted['url']}")
    print(f"# opens {minted['page']} once, within {minted['expires_in']} s", file=sys.stderr)
    return 0


def mcp_stdio(settings: Settings) -> int:
    from memstream.gateway.mcp import run_stdio

    logging.getLogger().handlers[:] = [logging.StreamHandler(sys.stderr)]
    resolved = resolve_settings(settings)
    doors = Doors(resolved)
    asyncio.run(run_stdio(doors, resolved.key or os.environ.get(CREDENTIAL_VARIABLE)))
    return 0
