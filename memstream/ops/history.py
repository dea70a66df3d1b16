"""``memstream history MEMORY_KEY --tenant T``: a memory's version chain, bi-temporally.

Each version with its valid time (valid_from → valid_to), its transaction time (recorded_at →
superseded_at), source, status, and which version is current.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memstream.ops.stack import resolve_settings
from memstream.services import bootstrap
from memstream.services.domain import versioning
from memstream.services.domain.model import MemoryVersion
from memstream.services.ports import ErasureMark
from memstream.services.settings import Settings

out = Console(highlight=False)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def version_json(v: MemoryVersion) -> dict[str, object]:
    return {
        "memory_key": v.memory_key,
        "version": v.version,
        "version_id": v.version_id,
        "parent_id": v.parent_id,
        "event_id": v.event_id,
        "op": v.op.value,
        "is_current": v.is_current,
        "valid_from": _iso(v.valid_from),
        "valid_to": _iso(v.valid_to),
        "recorded_at": _iso(v.recorded_at),
        "superseded_at": _iso(v.superseded_at),
        "source_system": v.source_system,
        "status": v.status,
        "fact_type": v.fact_type,
        "entity": f"{v.entity_type}:{v.entity_id}",
        "content": v.content,
    }


async def load_chain(dsn: str, tenant_id: str, memory_key: str) -> list[MemoryVersion]:
    return (await load_chain_and_marks(dsn, tenant_id, memory_key))[0]


async def load_chain_and_marks(
    dsn: str, tenant_id: str, memory_key: str
) -> tuple[list[MemoryVersion], dict[str, ErasureMark]]:
    """The chain and, by version_id, the erasure tombstones of its erased versions."""
    async with bootstrap.stores(dsn) as stores:
        chain = await stores.repo.chain(tenant_id, memory_key)
        return chain, await stores.erasure.marks(tenant_id, memory_key)


def tombstone_json(mark: ErasureMark) -> dict[str, object]:
    return {
        "erasure_id": mark.erasure_id,
        "erased_at": _iso(mark.erased_at),
        "reason": mark.reason,
        "content_sha256": mark.content_digest,
    }


def tombstone_text(mark: ErasureMark) -> str:
    why = f" · {mark.reason}" if mark.reason else ""
    return f"[erased {_short(mark.erased_at)} · erasure {mark.erasure_id}{why}]"


def history(
    settings: Settings,
    tenant_id: str,
    memory_key: str,
    *,
    as_json: bool,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
) -> int:
    """The chain; ``known_at`` re-derives it as memstream knew it then (transaction time) and
    ``as_of`` keeps the version that was true then (valid time)."""
    settings = resolve_settings(settings)
    assert settings.postgres_dsn is not None
    chain, marks = asyncio.run(load_chain_and_marks(settings.postgres_dsn, tenant_id, memory_key))
    if chain and known_at is not None:
        chain = versioning.known_at(chain, known_at)
    if chain and as_of is not None:
        valid = versioning.valid_at(chain, as_of)
        chain = [valid] if valid is not None else []
    if not chain:
        when = "".join(
            f" {label} {moment.isoformat()}"
            for label, moment in (("as of", as_of), ("known at", known_at))
            if moment is not None
        )
        Console(stderr=True).print(
            f"memstream: history: no memory {memory_key!r} for tenant {tenant_id!r}{when}",
            markup=False,
        )
        return 1
    if as_json:
        for version in chain:
            line = version_json(version)
            if version.version_id in marks:
                line["erased"] = tombstone_json(marks[version.version_id])
            print(json.dumps(line, ensure_ascii=False))
        return 0
    table = Table(title=f"{memory_key} · tenant {tenant_id}", title_justify="left")
    for column in (
        "v",
        "now",
        "valid from → to",
        "recorded → superseded",
        "source",
        "status",
        "content",
    ):
        table.add_column(column, overflow="fold")
    for v in chain:
        mark = marks.get(v.version_id)
        table.add_row(
            str(v.version),
            "●"
            if v.is_current
            else ("✕" if v.op.value == "RETRACT" or v.version_id in marks else ""),
            f"{_short(v.valid_from)} → {_short(v.valid_to)}",
            f"{_short(v.recorded_at)} → {_short(v.superseded_at)}",
            v.source_system,
            v.status,
            escape(tombstone_text(mark)) if mark is not None else v.content[:80],
        )
    out.print(table)
    return 0


def _short(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment is not None else "…"
