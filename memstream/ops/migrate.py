"""Schema migrations: versioned SQL files in ``ops/migrations``, applied idempotently at start.

Each file ``NNNN_name.sql`` runs once, in its own transaction, under an advisory lock (several
workers may start at once), and is recorded in ``schema_migrations`` with its checksum; a file
changed after it was applied is an error. Must not import handlers or streams.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources

import psycopg

_LOCK_ID = 7_361_021_044  # pg_advisory_xact_lock key of memstream migrations
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class MigrationError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def available() -> list[Migration]:
    """Every migration shipped with the package, in order."""
    found = []
    for entry in resources.files("memstream.ops").joinpath("migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    return sorted(found, key=lambda m: m.version)


def migrate(dsn: str) -> list[int]:
    """Apply the migrations not applied yet; return the versions applied now."""
    applied_now: list[int] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for migration in available():
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations ("
                    " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT now())"
                )
                row = conn.execute(
                    "SELECT checksum FROM schema_migrations WHERE version = %s",
                    (migration.version,),
                ).fetchone()
                if row is not None:
                    if row[0] != migration.checksum:
                        raise MigrationError(
                            f"migration {migration.version:04d}_{migration.name} changed after "
                            "it was applied; add a new migration instead of editing it"
                        )
                    continue
                conn.execute(migration.sql.encode())
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                    (migration.version, migration.name, migration.checksum),
                )
                applied_now.append(migration.version)
    return applied_now


def applied(dsn: str) -> list[int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
    return [r[0] for r in rows]
