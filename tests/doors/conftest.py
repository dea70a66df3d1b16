"""One real stack for the doors' tests: Tansu, the machine's Postgres and Redis, one worker,
and one `memstream gateway` process with a credentials file of four keys (an agent and a
producer of the tenant, an agent of another tenant, an all-tenant admin)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstream.ops.stack import free_port
from tests.conftest import unique
from tests.e2e.ingest_kit import IngestSetup, encoded, make_setup, produce
from tests.e2e.processes import Process

NOW = datetime.now(UTC).replace(microsecond=0)


@dataclass
class Doors:
    setup: IngestSetup
    url: str
    tenant: str
    other_tenant: str
    keys: dict[str, str]  # role name → credential
    gateway: Process

    def headers(self, name: str = "agent") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[name]}"}

    def ingest(self, events: list[dict[str, Any]]) -> None:
        produce(self.setup.broker, self.setup.topics.events, (encoded(e) for e in events))
        status = self.setup.wait([(e["tenant_id"], e["event_id"]) for e in events], timeout=120)
        assert not status.pending and not status.dead, status


def memory_event(
    tenant: str,
    key: str,
    content: str,
    *,
    ago: timedelta,
    entity: str = "customer:C-17",
    fact: str = "note",
    source: str = "crm",
    op: str = "UPSERT",
    **extra: Any,
) -> dict[str, Any]:
    entity_type, entity_id = entity.split(":", 1)
    return {
        "event_id": f"{key}@{uuid.uuid4().hex[:8]}",
        "tenant_id": tenant,
        "memory_key": key,
        "entity_type": entity_type,
        "entity_id": entity_id,
        "fact_type": fact,
        "content": content,
        "source_system": source,
        "status": "active",
        "op": op,
        "occurred_at": (NOW - ago).isoformat(),
        **extra,
    }


def seed(tenant: str) -> list[dict[str, Any]]:
    return [
        memory_event(
            tenant,
            "return:C-17:O-1",
            "Customer C-17 returned order O-1, a blue kettle, for a refund.",
            ago=timedelta(days=9),
            fact="return",
        ),
        memory_event(
            tenant,
            "spec:X1",
            "The X1 headphones charge over micro-USB.",
            ago=timedelta(days=300),
            entity="product:X1",
            fact="product_spec",
            source="catalog",
        ),
        memory_event(
            tenant,
            "spec:X1",
            "The X1 headphones charge over USB-C.",
            ago=timedelta(days=20),
            entity="product:X1",
            fact="product_spec",
            source="catalog",
        ),
    ]


@pytest.fixture(scope="session")
def doors(
    broker: str, machine_postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Doors]:
    setup = make_setup(broker, machine_postgres_dsn, tmp_path_factory.mktemp("doors"))
    tenant, other = unique("tenant-"), unique("tenant-")
    keys = {name: f"ms_{name}_{uuid.uuid4().hex}" for name in ("agent", "producer", "other")}
    keys["admin"] = f"ms_admin_{uuid.uuid4().hex}"
    entries = {
        "agent": {"secret": keys["agent"], "tenant_id": tenant, "role": "agent"},
        "producer": {"secret": keys["producer"], "tenant_id": tenant, "role": "producer"},
        "other": {"secret": keys["other"], "tenant_id": other, "role": "agent"},
        "admin": {"secret": keys["admin"], "tenant_id": None, "role": "admin"},
    }
    path = setup.data_dir / "credentials.json"
    path.write_text(json.dumps(entries))
    path.chmod(0o600)
    worker = setup.worker()
    port = free_port()
    gateway = Process(["gateway", "--port", str(port)], setup.env())
    try:
        gateway.wait_for("memstream gateway ready on", timeout=60)
        state = Doors(setup, f"http://127.0.0.1:{port}", tenant, other, keys, gateway)
        state.ingest(seed(tenant))
        yield state
    finally:
        gateway.terminate()
        print("gateway output:", gateway.output[-6000:])
        worker.terminate()
