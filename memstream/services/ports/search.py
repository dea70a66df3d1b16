"""The query path's keyword search and the gate's look at the asker's own words.

Ports (Protocols and the values they carry); must not import any adapter nor any I/O library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from memstream.services.domain.model import MemoryVersion
from memstream.services.ports.vectors import VectorFilter


@dataclass(frozen=True, slots=True)
class KeywordHit:
    """A version found by keyword search; ``score`` in [0, 1] (1 = every query term matched)."""

    version_id: str
    score: float


class MemoryQueries(Protocol):
    """The read side of Postgres: tenants, keyword search, and versions by id (tenant-scoped)."""

    async def known_tenant(self, tenant_id: str) -> bool: ...

    async def keyword_search(
        self, tenant_id: str, query: str, flt: VectorFilter, limit: int
    ) -> list[KeywordHit]:
        """Full text + trigram/substring search over content and attribute values, with the
        same filter semantics as ``VectorIndex.search`` (current_only, as_of, anchors, window,
        fact_types, exclude_statuses). Only UPSERT versions; never another tenant's rows."""
        ...

    async def versions(self, tenant_id: str, version_ids: Sequence[str]) -> list[MemoryVersion]:
        """The versions with these ids that belong to ``tenant_id`` (others are ignored)."""
        ...

    async def chains(self, tenant_id: str, memory_keys: Sequence[str]) -> list[MemoryVersion]:
        """Every version of these memories of ``tenant_id``."""
        ...


@dataclass(frozen=True, slots=True)
class TermCounts:
    """How many memories were looked at, and how many of them hold each term."""

    memories: int
    held: Mapping[str, int]


class HeldTerms(Protocol):
    """The gate's look at the asker's own memories (``gating.own_terms``)."""

    async def held_terms(
        self, tenant_id: str, terms: Sequence[str], flt: VectorFilter
    ) -> TermCounts:
        """How many UPSERT versions of ``tenant_id`` pass ``flt`` and, for each of ``terms``
        (content words, CJK grams), how many of them hold it, matched as keyword search
        matches a word (an English word by its stem at the start of a word, a short stem by
        its inflected whole words, a gram as a substring); counted over at most a bounded
        number of versions. ``flt`` must name ``anchors`` (the asker's): without them nothing
        is counted. Never another tenant's rows."""
        ...
