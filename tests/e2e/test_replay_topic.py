"""``memstream replay --from-topic``: re-reading the events topic by explicit offset ranges.

A real worker ingests a history from Tansu (supersessions, a RETRACT, malformed messages that are
dead-lettered); every replay then runs as the user runs it, as a ``memstream replay`` process,
reading the topic itself by the offsets the ledger recorded (or named ones).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from memstream.ops.migrate import migrate
from tests.conftest import drop_schema, unique, with_schema
from tests.e2e.ingest_kit import IngestSetup, encoded, event, make_setup
from tests.e2e.processes import run_cli

TIMEOUT = 240
LEDGER = (
    'SELECT tenant_id, event_id, topic, "partition", "offset", outcome, payload, received_at'
    " FROM event_ledger ORDER BY 1, 2"
)
CHAINS = (
    "SELECT tenant_id, memory_key, version, op, content, valid_from, valid_to, is_current"
    " FROM memory_versions ORDER BY 1, 2, 3"
)
DEAD = 'SELECT topic, "partition", "offset", reason, original FROM dead_letters ORDER BY 1, 2, 3'


@dataclass
class Ingested:
    setup: IngestSetup
    server: str
    tenants: tuple[str, str]
    events: int
    malformed: int
    schemas: list[str]

    def cli(self, *args: str, dsn: str | None = None) -> tuple[int, str]:
        env = self.setup.env(**({"MEMSTREAM_POSTGRES_DSN": dsn} if dsn else {}))
        done = run_cli(["replay", *args], env, timeout=TIMEOUT)
        return done.returncode, done.stdout + done.stderr

    def schema(self) -> str:
        self.schemas.append(unique("rt_"))
        return self.schemas[-1]


@pytest.fixture(scope="module")
def ingested(
    broker: str, machine_postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Ingested]:
    setup = make_setup(broker, machine_postgres_dsn, tmp_path_factory.mktemp("replay-topic"))
    tenants = (unique("tenant-"), unique("tenant-"))
    # Per tenant: 6 memories × 5 versions, interleaved; then a RETRACT closes one memory.
    events = [event(t, f"pref:C-{n % 6}", n) for n in range(30) for t in tenants]
    events += [event(tenants[0], "pref:C-1", 500, op="RETRACT", content="")]
    messages: list[tuple[bytes | None, bytes]] = [encoded(e) for e in events]
    malformed = [(b"junk", b"\x00not avro"), (b"junk", b"\xff" * 7)]
    setup.produce(messages[:30] + malformed + messages[30:])
    worker = setup.worker()
    try:
        status = setup.wait([(e["tenant_id"], e["event_id"]) for e in events])
    finally:
        assert worker.terminate() == 0, worker.output[-3000:]
    assert not status.pending and not status.dead
    state = Ingested(setup, machine_postgres_dsn, tenants, len(events), len(malformed), [])
    assert len(setup.sql(DEAD)) == len(malformed)
    yield state
    live_schema = re.findall(r"search_path=(\w+)", setup.dsn)
    for name in [*live_schema, *state.schemas]:
        drop_schema(machine_postgres_dsn, name)


def checksums(output: str) -> dict[str, str]:
    return dict(re.findall(r"tenant (\S+) · identical · sha256 ([0-9a-f]{64})", output))


def test_topic_replay_into_a_copy_reproduces_ledger_versions_dead_letters_and_vectors(
    ingested: Ingested,
) -> None:
    name = ingested.schema()
    code, output = ingested.cli("--from-topic", "--into-schema", name)
    assert code == 0, output
    read = ingested.events + ingested.malformed
    assert "(ranges from the ledger)" in output, output
    assert f"replay: {read} messages read from {ingested.setup.topics.events}" in output, output
    assert f"recorded {ingested.events} · duplicates 0 · dead-lettered 2" in output, output
    assert "versions indexed" in output, output
    live = ingested.setup
    # Same events at the same positions, with the transaction time the live ledger recorded.
    assert live.sql(LEDGER.replace("FROM event_ledger", f"FROM {name}.event_ledger")) == live.sql(
        LEDGER
    )
    assert live.sql(CHAINS.replace("FROM memory_versions", f"FROM {name}.memory_versions")) == (
        live.sql(CHAINS)
    )
    assert live.sql(DEAD.replace("FROM dead_letters", f"FROM {name}.dead_letters")) == live.sql(
        DEAD
    )
    code, output = ingested.cli("--verify", "--into-schema", name)
    assert code == 0, output
    assert set(checksums(output)) == set(ingested.tenants), output
    # Everything read already: a second run reads nothing more and still verifies.
    code, output = ingested.cli("--from-topic", "--into-schema", name)
    assert code == 0 and "offsets nothing left" in output, output
    assert "replay: 0 messages read" in output, output
    assert live.sql(f"SELECT count(*) FROM {name}.event_ledger") == [(ingested.events,)]


def test_explicit_offsets_and_a_tenant_replay_only_that(ingested: Ingested) -> None:
    name = ingested.schema()
    tenant = ingested.tenants[1]
    partitions = ingested.setup.sql(
        'SELECT "partition", min("offset"), max("offset") FROM event_ledger WHERE tenant_id = %s'
        " GROUP BY 1 ORDER BY 1",
        tenant,
    )
    ranges = [f"{p}:{first}-{last}" for p, first, last in partitions]
    args = ["--from-topic", "--into-schema", name, "--tenant", tenant, "--no-vectors"]
    code, output = ingested.cli(*args, *[a for r in ranges for a in ("--offsets", r)])
    assert code == 0, output
    assert "(ranges from --offsets)" in output, output
    assert "recorded 30 · duplicates 0 · dead-lettered 0 · out of scope" in output, output
    only = ingested.setup.sql(f"SELECT DISTINCT tenant_id FROM {name}.event_ledger")
    assert only == [(tenant,)]
    code, output = ingested.cli("--verify", "--into-schema", name)
    assert code == 0 and set(checksums(output)) == {tenant}, output


def test_into_live_restores_what_a_lost_database_held(ingested: Ingested) -> None:
    """A database restored empty (the worst backup) gets every version back from the topic."""
    restored = ingested.schema()
    dsn = with_schema(ingested.server, restored)
    migrate(dsn)
    code, output = ingested.cli("--from-topic", "--into-live", dsn=dsn)
    assert code == 0 and "records nothing from topic" in output, output  # no ranges to guess
    ends = ingested.setup.sql('SELECT "partition" FROM event_ledger GROUP BY 1')
    opened = [a for (p,) in ends for a in ("--offsets", f"{p}:0-")]
    code, output = ingested.cli("--from-topic", "--into-live", *opened, dsn=dsn)
    assert code == 0, output
    assert f"recorded {ingested.events} · duplicates 0 · dead-lettered 2" in output, output
    assert "indexed by the worker's sweep" in output, output
    live = ingested.setup
    assert live.sql(CHAINS.replace("FROM memory_versions", f"FROM {restored}.memory_versions")) == (
        live.sql(CHAINS)
    )
    positions = (
        'SELECT tenant_id, event_id, topic, "partition", "offset" FROM {}event_ledger ORDER BY 1, 2'
    )
    assert live.sql(positions.format(f"{restored}.")) == live.sql(positions.format(""))
    upserts = "SELECT count(*) FROM {}memory_versions WHERE op = 'UPSERT' AND {}"
    # Versions only: the worker running on the restored database embeds them (its sweep).
    assert live.sql(upserts.format(f"{restored}.", "indexed_at IS NULL")) == live.sql(
        upserts.format("", "true")
    )
    # Replaying the same ranges again reads only what came after them: nothing.
    code, output = ingested.cli("--from-topic", "--into-live", *opened, dsn=dsn)
    assert code == 0 and "resuming after the offsets it holds" in output, output
    assert "replay: 0 messages read" in output, output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from-topic", "--into-schema", "x", "--offsets", "0:9-3"], "ends before it starts"),
        (["--from-topic", "--into-schema", "x", "--offsets", "zero"], "is not PARTITION:FIRST"),
        (["--into-schema", "x", "--offsets", "0:0-1"], "--offsets needs --from-topic"),
        (["--into-live"], "--into-live needs --from-topic"),
        (["--from-topic", "--index"], "--from-topic rebuilds versions"),
        (["--from-topic", "--into-live", "--no-vectors"], "--no-vectors is for --into-schema"),
    ],
)
def test_misuse_is_one_line_and_exit_2(ingested: Ingested, args: list[str], message: str) -> None:
    code, output = ingested.cli(*args)
    lines = output.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0], output


def test_a_partition_the_topic_lacks_is_refused_before_anything_is_created(
    ingested: Ingested,
) -> None:
    name = ingested.schema()
    code, output = ingested.cli("--from-topic", "--into-schema", name, "--offsets", "99:0-1")
    lines = output.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "has no partition 99" in lines[0], output
    exists = "SELECT count(*) FROM pg_namespace WHERE nspname = %s"
    assert ingested.setup.sql(exists, name) == [(0,)]
