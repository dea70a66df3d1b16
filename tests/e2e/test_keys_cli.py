"""``memstream tenants …`` / ``memstream keys …`` as an operator runs them, on a real schema."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memstream.ops.migrate import migrate
from memstream.schemas import envelope
from memstream.services.adapters.postgres_credentials import PostgresCredentialStore
from memstream.services.domain.identity import Unauthenticated
from tests.conftest import drop_schema, unique, with_schema
from tests.e2e.processes import run_cli
from tests.identity_kit import utcnow


@pytest.fixture
def env(machine_postgres_dsn: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    schema = unique("ms_")
    dsn = with_schema(machine_postgres_dsn, schema)
    migrate(dsn)
    yield {
        "MEMSTREAM_DATA_DIR": str(tmp_path),
        "MEMSTREAM_POSTGRES_DSN": dsn,
        "MEMSTREAM_BROKER": "127.0.0.1:1",
        "MEMSTREAM_REDIS_URL": "redis://127.0.0.1:6379/0",
    }
    drop_schema(machine_postgres_dsn, schema)


def _secret(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.startswith("msk1.")]
    assert len(lines) == 1, stdout
    return lines[0]


async def _authenticate(dsn: str, secret: str) -> str:
    store = await PostgresCredentialStore.connect(dsn, utcnow, cache_seconds=0)
    try:
        return (await store.authenticate(secret)).tenant_id
    except Unauthenticated as exc:
        return exc.reason
    finally:
        await store.close()


def test_tenants_and_keys_lifecycle(env: dict[str, str]) -> None:
    dsn = env["MEMSTREAM_POSTGRES_DSN"]
    assert run_cli(["tenants", "create", "acme"], env).returncode == 0
    bad = run_cli(["tenants", "create", "acme "], env)
    assert bad.returncode == 2 and "tenant id" in bad.stdout
    created = run_cli(["keys", "create", "--tenant", "acme", "--role", "agent"], env)
    assert created.returncode == 0, created
    secret = _secret(created.stdout)
    key_id = envelope.Credential.parse(secret).key_id
    assert asyncio.run(_authenticate(dsn, secret)) == "acme"
    # Only a hash and a public key are stored: the secret is nowhere in the database.
    with psycopg.connect(dsn) as conn:
        dump = repr(conn.execute("SELECT * FROM credentials").fetchall())
    assert secret.split(".")[2] not in dump
    listed = run_cli(["keys", "list", "--tenant", "acme"], env)
    assert key_id in listed.stdout and "active" in listed.stdout and "msk1." not in listed.stdout
    producer = run_cli(["keys", "create", "--tenant", "acme", "--role", "producer"], env)
    assert producer.returncode == 2 and "--source" in producer.stdout
    rotated = run_cli(["keys", "rotate", key_id, "--overlap", "1h"], env)
    assert rotated.returncode == 0, rotated
    fresh = _secret(rotated.stdout)
    assert asyncio.run(_authenticate(dsn, secret)) == "acme"  # within the overlap
    assert asyncio.run(_authenticate(dsn, fresh)) == "acme"
    assert run_cli(["keys", "revoke", key_id], env).returncode == 0
    assert asyncio.run(_authenticate(dsn, secret)) == f"key {key_id} is revoked"
    shown = run_cli(["tenants", "show", "acme"], env)
    assert "revoked" in shown.stdout and "active" in shown.stdout
    assert "acme\t1 active of 2 keys" in run_cli(["tenants", "list"], env).stdout


def test_publish_for_a_tenant_without_a_credential_says_which_and_how(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The papercut as a new user meets it: credentials.json holds the development tenant, the
    file names `acme`. The message names acme and the two commands; after them, publish finds
    acme's credential (and goes on to the broker, which this test does not run)."""
    for tenant in ("dev", "acme"):
        assert run_cli(["tenants", "create", tenant], env).returncode == 0
    dev = run_cli(["keys", "create", "--tenant", "dev", "--role", "producer", "--source", "crm",
                   "--save"], env)  # fmt: skip
    assert dev.returncode == 0 and "msk1." not in dev.stdout, dev  # saved, not shown
    events = tmp_path / "acme.jsonl"
    events.write_text(
        '{"event_id": "e1", "tenant_id": "acme", "entity_type": "customer", "entity_id": "C-1",'
        ' "fact_type": "note", "content": "C-1 prefers email.", "source_system": "crm",'
        ' "occurred_at": "2026-06-01T00:00:00+00:00"}\n',
        encoding="utf-8",
    )
    missing = run_cli(["publish", str(events)], env)
    assert missing.returncode == 2, missing
    assert "no producer credential for tenant 'acme'" in missing.stderr, missing.stderr
    assert "`memstream tenants create acme`" in missing.stderr
    command = "memstream keys create --tenant acme --role producer --source"
    assert command in missing.stderr and "start `memstream up`" not in missing.stderr

    made = run_cli(["keys", "create", "--tenant", "acme", "--role", "producer", "--source",
                    "crm", "--save"], env)  # fmt: skip
    assert made.returncode == 0 and "saved in" in made.stdout, made
    found = run_cli(["publish", str(events)], env)
    assert "no producer credential" not in found.stderr
    assert "cannot reach 127.0.0.1:1" in found.stderr + found.stdout, found
