"""``bench query --via-http``: the same questions through the HTTP gateway.

A ``memstream gateway`` process on the bench's stack, asked with the bench tenant's agent
credential, one request at a time over one keep-alive connection: client send
→ JSON reply received, so the figure is the Kafka path plus the gateway's hop and JSON.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from memstream.ops.stack import free_port, wait_tcp
from memstream.services.settings import Settings


def start_gateway(settings: Settings, tenant: str) -> tuple[subprocess.Popen[bytes], str, str]:
    """A gateway on resolved ``settings``, listening: (process, url, credential)."""
    from memstream.ops.identity import credential_for

    key = credential_for(settings, "agent", tenant=tenant)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env.update(settings.to_env())
    proc = subprocess.Popen(
        [sys.executable, "-m", "memstream.cli", "gateway", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not wait_tcp("127.0.0.1", port, 60.0, proc):
        proc.kill()
        raise RuntimeError("the gateway did not start")
    return proc, f"http://127.0.0.1:{port}", key


def ask_over_http(url: str, credential: str, texts: list[str]) -> list[float]:
    import httpx

    times = []
    headers = {"Authorization": f"Bearer {credential}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        client.post("/v1/retrieve", json={"query": "warm-up", "force": True}).raise_for_status()
        for text in texts:
            started = time.perf_counter()
            response = client.post("/v1/retrieve", json={"query": text, "force": True, "limit": 10})
            response.raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
    return times
