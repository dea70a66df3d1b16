"""Checksums of memstream's state per tenant, and their comparison (``replay --verify``).

A tenant's state is a set of *components*, each a map from a stable key to one canonical line
(a compact JSON array of plain values; times as ISO-8601 UTC with microseconds):

- ``versions``: key ``memory_key`` + ``version``; line = memory_key, version, version_id,
  parent_id, event_id, op, status, valid_from, valid_to, is_current, sha256(content);
- ``current``: the current version of each memory (memory_key, version_id);
- ``ledger``: key event_id; line = event_id, memory_key, op, version_id, outcome, topic,
  partition, offset, received_at, md5 of the payload's jsonb text;
- ``vectors``: key point id; line = id, is_current, valid_to (epoch seconds, 6 decimals) — read
  from a vector index, or *expected* from Postgres (one point per UPSERT version).

A component's digest is the sha256 of its lines sorted by key (code-point order), joined by
newlines; a tenant's checksum is the sha256 of ``name:digest`` lines of the components compared.
Transaction times of versions (recorded_at / superseded_at) are left out on purpose: the live
worker stamps its own clock, a replay stamps the ledger's received_at, which the ``ledger``
component compares instead.

Pure; must not import any I/O library.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memstream.services.domain.model import MemoryVersion, Op

ORDER = ("versions", "current", "ledger", "vectors")
SHOWN_DIFFERENCES = 5


def line(*values: object) -> str:
    """One canonical line: a compact JSON array."""
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment is not None else None


def epoch(value: float | None) -> str | None:
    return None if value is None else f"{float(value):.6f}"


@dataclass
class Component:
    name: str
    rows: dict[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        text = "\n".join(self.rows[key] for key in sorted(self.rows))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class TenantState:
    tenant_id: str
    components: dict[str, Component] = field(default_factory=dict)

    def component(self, name: str) -> Component:
        return self.components.setdefault(name, Component(name))

    def checksum(self, names: Iterable[str]) -> str:
        wanted = set(names)
        text = "".join(f"{n}:{self.component(n).digest}\n" for n in ORDER if n in wanted)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


State = dict[str, TenantState]


def tenant_state(state: State, tenant_id: str) -> TenantState:
    return state.setdefault(tenant_id, TenantState(tenant_id))


def expected_point(v: MemoryVersion) -> str:
    """The canonical vectors line Postgres implies for an UPSERT version."""
    return line(v.version_id, v.is_current, epoch(v.valid_to.timestamp() if v.valid_to else None))


def point_line(point_id: str, is_current: object, valid_to: float | None) -> str:
    """The canonical vectors line of a point as a vector index holds it."""
    return line(point_id, is_current, epoch(valid_to))


def add_version(state: State, v: MemoryVersion, *, expected_vectors: bool = False) -> None:
    """Add one version's ``versions`` / ``current`` lines (and, with ``expected_vectors``, the
    point Postgres implies for it)."""
    tenant = tenant_state(state, v.tenant_id)
    key = f"{v.memory_key}\x1f{v.version:010d}"
    content = hashlib.sha256(v.content.encode("utf-8")).hexdigest()
    tenant.component("versions").rows[key] = line(
        v.memory_key, v.version, v.version_id, v.parent_id, v.event_id, v.op.value, v.status,
        iso(v.valid_from), iso(v.valid_to), v.is_current, content,
    )  # fmt: skip
    tenant.component("current")
    if v.is_current:
        tenant.component("current").rows[v.memory_key] = line(v.memory_key, v.version_id)
    if expected_vectors:
        vectors = tenant.component("vectors")
        if v.op is Op.UPSERT:
            vectors.rows[v.version_id] = expected_point(v)


@dataclass(frozen=True, slots=True)
class LedgerLine:
    """One ledger row as the ``ledger`` component compares it."""

    tenant_id: str
    event_id: str
    memory_key: str
    op: str
    version_id: str | None
    outcome: str
    topic: str
    partition: int
    offset: int
    received_at: datetime
    payload_md5: str


def add_ledger(state: State, row: LedgerLine) -> None:
    tenant_state(state, row.tenant_id).component("ledger").rows[row.event_id] = line(
        row.event_id, row.memory_key, row.op, row.version_id, row.outcome, row.topic,
        row.partition, row.offset, iso(row.received_at), row.payload_md5,
    )  # fmt: skip


@dataclass
class TenantReport:
    tenant_id: str
    checksum_a: str
    checksum_b: str
    counts: dict[str, int]
    differences: list[str]

    @property
    def identical(self) -> bool:
        return self.checksum_a == self.checksum_b and not self.differences


def _differences(name: str, a: Component, b: Component, labels: tuple[str, str]) -> list[str]:
    """The first differing rows (by key), and how many more there are."""
    keys = [k for k in sorted(a.rows.keys() | b.rows.keys()) if a.rows.get(k) != b.rows.get(k)]
    found: list[str] = []
    for key in keys[:SHOWN_DIFFERENCES]:
        left, right = a.rows.get(key), b.rows.get(key)
        if left is None:
            found.append(f"{name}: only in {labels[1]}: {right}")
        elif right is None:
            found.append(f"{name}: only in {labels[0]}: {left}")
        else:
            found.append(f"{name}: {labels[0]} {left} ≠ {labels[1]} {right}")
    if len(keys) > SHOWN_DIFFERENCES:
        found.append(f"{name}: … {len(keys) - SHOWN_DIFFERENCES} more differences")
    return found


def compare(
    a: State, b: State, names: Sequence[str], labels: tuple[str, str]
) -> list[TenantReport]:
    """One report per tenant present on either side, components ``names`` compared."""
    reports = []
    for tenant_id in sorted(a.keys() | b.keys()):
        left, right = tenant_state(a, tenant_id), tenant_state(b, tenant_id)
        differences = [
            d for n in names for d in _differences(n, left.component(n), right.component(n), labels)
        ]
        reports.append(
            TenantReport(
                tenant_id,
                left.checksum(names),
                right.checksum(names),
                {n: len(left.component(n).rows) for n in names},
                differences,
            )
        )
    return reports


def render(reports: Sequence[TenantReport], labels: tuple[str, str]) -> list[str]:
    """Lines for the console: a checksum per tenant, then the first differences."""
    lines: list[str] = []
    for r in reports:
        counts = " · ".join(f"{name} {count}" for name, count in r.counts.items())
        if r.identical:
            lines.append(f"tenant {r.tenant_id} · identical · sha256 {r.checksum_a} ({counts})")
            continue
        lines.append(
            f"tenant {r.tenant_id} · DIFFERENT · {labels[0]} sha256 {r.checksum_a} · "
            f"{labels[1]} sha256 {r.checksum_b}"
        )
        lines.extend(f"  {d}" for d in r.differences)
    differ = sum(1 for r in reports if not r.identical)
    if not reports:
        lines.append("verify: no tenant to compare")
    elif differ:
        lines.append(f"verify: {differ} of {len(reports)} tenants differ")
    else:
        lines.append(f"verify: identical ({len(reports)} tenant{'s' * (len(reports) != 1)})")
    return lines
