"""How many bytes the database takes on disk (``bench scale``'s bytes per memory)."""

from __future__ import annotations

import psycopg


def database_bytes(dsn: str) -> int:
    """``pg_database_size`` of the database ``dsn`` names: tables, indexes, TOAST, free space."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return int(row[0]) if row else 0
