"""What both vector-index adapters (Qdrant Edge, Qdrant server) share: tenant names, point ids,
vectors and payload times checked alike, so that both fail with the same messages.

Must not import handlers or streams.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Sequence
from datetime import datetime

from memstream.services.ports import AdapterError


def tenant_slug(tenant_id: str) -> str:
    """A safe, deterministic name part: a readable slug plus a hash of the exact id."""
    slug = re.sub(r"[^a-z0-9]+", "-", tenant_id.lower()).strip("-")[:40] or "tenant"
    digest = hashlib.sha256(tenant_id.encode("utf-8")).hexdigest()[:16]
    return f"{slug}-{digest}"


def epoch(moment: datetime) -> float:
    if moment.utcoffset() is None:
        raise ValueError(f"naive datetime {moment.isoformat()}: use timezone-aware datetimes")
    return moment.timestamp()


def canonical_id(tenant_id: str, raw: str) -> str:
    try:
        return str(uuid.UUID(raw))
    except (TypeError, ValueError, AttributeError) as exc:
        raise AdapterError(f"point id {raw!r} of tenant {tenant_id!r} is not a uuid") from exc


def wellformed_ids(raws: Sequence[str]) -> list[str]:
    """The canonical form of each id that is a uuid (point ids are uuids); others dropped."""
    found: dict[str, None] = {}
    for raw in raws:
        try:
            found.setdefault(str(uuid.UUID(raw)), None)
        except (TypeError, ValueError, AttributeError):
            continue
    return list(found)


def checked_vector(
    tenant_id: str, point: str, vector: Sequence[float], dimension: int
) -> list[float]:
    values = [float(x) for x in vector]
    if len(values) != dimension:
        raise AdapterError(
            f"vector of {point} (tenant {tenant_id!r}) has {len(values)} dimensions, "
            f"the index has {dimension}"
        )
    return values
