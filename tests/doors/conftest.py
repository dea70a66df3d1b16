"""One real stack for the doors' tests: Tansu, the machine's Postgres and Redis, one worker,
and one `memstream gateway` process; credentials from the tenants' store: an agent, a producer
(sources crm and catalog) and an admin of the tenant, and an agent of another tenant."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstream.ops.stack import free_port
from tests.conftest import unique
from tests.e2e.ingest_kit import IngestSetup, encoded, make_setup
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
        self.setup.produce(encoded(e) for e in events)
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
    keys = {
        "agent": setup.keyring.key(tenant, "agent"),
        "producer": setup.keyring.key(tenant, "producer", ["crm", "catalog"]),
        "admin": setup.keyring.key(tenant, "admin"),
        "other": setup.keyring.key(other, "agent"),
    }
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
