"""PostgresIndexEncoder: the record of which encoder produced the live vector index.

One row (``index_encoder``, migration 0012). The worker compares its encoder with it at start
and ``replay --index`` replaces it after re-indexing every tenant. Must not import handlers or
streams.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memstream.services.adapters.postgres_rows import translate


@dataclass(frozen=True, slots=True)
class IndexEncoder:
    """What the vectors of an index are: the model, their kind (fp32 or int8), their size;
    ``encoder`` says which one wrote them (fp32 encoders are interchangeable)."""

    model: str
    vectors: str
    dimension: int
    encoder: str

    def same_vectors(self, other: IndexEncoder) -> bool:
        return (self.model, self.vectors, self.dimension) == (
            other.model,
            other.vectors,
            other.dimension,
        )

    def describe(self) -> str:
        return f"{self.vectors} vectors of {self.model} ({self.dimension}-d, {self.encoder})"


_INSERT = (
    "INSERT INTO index_encoder (model, vectors, dimension, encoder) VALUES (%s, %s, %s, %s)"
    " ON CONFLICT (singleton) DO NOTHING"
)
_REPLACE = (
    "INSERT INTO index_encoder (model, vectors, dimension, encoder) VALUES (%s, %s, %s, %s)"
    " ON CONFLICT (singleton) DO UPDATE SET model = EXCLUDED.model, vectors = EXCLUDED.vectors,"
    " dimension = EXCLUDED.dimension, encoder = EXCLUDED.encoder, recorded_at = now()"
)


class PostgresIndexEncoder:
    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool

    async def recorded(self) -> IndexEncoder | None:
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT model, vectors, dimension, encoder FROM index_encoder"
                )
                row = await cur.fetchone()
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, "reading the index's encoder") from exc
        return None if row is None else IndexEncoder(row[0], row[1], int(row[2]), row[3])

    async def anything_indexed(self) -> bool:
        """Whether any version was indexed (an index made before the record existed)."""
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT EXISTS (SELECT 1 FROM memory_versions WHERE indexed_at IS NOT NULL)"
                )
                row = await cur.fetchone()
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, "looking for indexed versions") from exc
        return bool(row and row[0])

    async def record(self, encoder: IndexEncoder, *, replace: bool = False) -> IndexEncoder:
        """Record ``encoder`` where none is (or always, with ``replace``); returns the record
        now in place — another worker's, when it recorded first."""
        try:
            async with self._pool.connection() as conn:
                await conn.execute(
                    _REPLACE if replace else _INSERT,
                    (encoder.model, encoder.vectors, encoder.dimension, encoder.encoder),
                )
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, "recording the index's encoder") from exc
        recorded = await self.recorded()
        assert recorded is not None
        return recorded
