"""The RetrievalReply as typed, frozen values: what an agent reads instead of a dict.

``RetrievalReply.from_record`` takes the reply as the Avro codec decodes it (times as
``datetime``) or as JSON carries it (times as ISO-8601 strings) and ``to_json`` gives the JSON
form back, so the Kafka client, the HTTP gateway and the framework adapters share one shape.
Stdlib only: the public client imports this without torch or Faust. Must not import any I/O
library, nor anything outside ``memstream.services.domain``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from memstream.services.domain.errors import DomainError


class MalformedReply(DomainError):
    """A reply record that lacks a field or holds a value of the wrong kind."""


def _moment(value: Any, name: str) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
    raise MalformedReply(f"{name} is not a time: {value!r}")


def _optional_moment(value: Any, name: str) -> datetime | None:
    return None if value is None else _moment(value, name)


def _field(record: Mapping[str, Any], name: str) -> Any:
    try:
        return record[name]
    except (KeyError, TypeError):
        raise MalformedReply(f"reply field {name!r} is missing") from None


@dataclass(frozen=True, slots=True)
class Scores:
    """Every score behind a result's rank, each in [0, 1]."""

    vector: float
    keyword: float
    fused: float
    authority: float
    recency: float
    binding: float
    state: float
    cross_validation: float
    trust: float
    final: float

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Scores:
        try:
            return cls(**{name: float(_field(record, name)) for name in cls.__slots__})
        except (TypeError, ValueError) as exc:
            raise MalformedReply(f"scores: {exc}") from None

    @property
    def trust_components(self) -> dict[str, float]:
        """The five factors whose weighted geometric mean is ``trust``."""
        return {
            "authority": self.authority,
            "recency": self.recency,
            "binding": self.binding,
            "state": self.state,
            "cross_validation": self.cross_validation,
        }


@dataclass(frozen=True, slots=True)
class Gate:
    """Whether memory was consulted (``retrieve``, ``skip``, ``forced``) and why."""

    decision: str
    reason: str

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Gate:
        return cls(str(_field(record, "decision")), str(_field(record, "reason")))


@dataclass(frozen=True, slots=True)
class ReplyError:
    """Why a request failed: a machine-readable ``code`` (e.g. ``missing_tenant``) and a
    message for people."""

    code: str
    message: str

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ReplyError:
        return cls(str(_field(record, "code")), str(_field(record, "message")))


@dataclass(frozen=True, slots=True)
class MemoryResult:
    """One memory version returned, with its evidence; ``rendered`` is the XML an LLM reads."""

    memory_key: str
    version: int
    version_id: str
    content: str
    entity_type: str
    entity_id: str
    fact_type: str
    source_system: str
    status: str
    effective_status: str
    occurred_at: datetime
    valid_from: datetime
    valid_to: datetime | None
    scores: Scores
    binding_kind: str
    conflicts_with: tuple[str, ...]
    rendered: str
    # Each ranking rule that moved this result and the factor it multiplied final by.
    factors: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> MemoryResult:
        text = {
            name: str(_field(record, name))
            for name in (
                "memory_key",
                "version_id",
                "content",
                "entity_type",
                "entity_id",
                "fact_type",
                "source_system",
                "status",
                "effective_status",
                "binding_kind",
                "rendered",
            )
        }
        try:
            version = int(_field(record, "version"))
        except (TypeError, ValueError):
            raise MalformedReply(f"version is not a number: {record.get('version')!r}") from None
        return cls(
            version=version,
            occurred_at=_moment(_field(record, "occurred_at"), "occurred_at"),
            valid_from=_moment(_field(record, "valid_from"), "valid_from"),
            valid_to=_optional_moment(record.get("valid_to"), "valid_to"),
            scores=Scores.from_record(_field(record, "scores")),
            conflicts_with=tuple(str(c) for c in record.get("conflicts_with") or ()),
            factors=_factors(record.get("factors")),
            **text,
        )

    @property
    def entity(self) -> str:
        return f"{self.entity_type}:{self.entity_id}"


@dataclass(frozen=True, slots=True)
class RetrievalReply:
    """The answer to one retrieval request: ``status`` is ``ok``, ``skipped`` or ``error``."""

    request_id: str
    status: str
    gate: Gate
    results: tuple[MemoryResult, ...] = ()
    latency_ms: Mapping[str, float] = field(default_factory=dict)
    error: ReplyError | None = None
    served_at: datetime | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RetrievalReply:
        if not isinstance(record, Mapping):
            raise MalformedReply(f"a reply is a mapping, not {type(record).__name__}")
        error = record.get("error")
        try:
            latency = {str(k): float(v) for k, v in (record.get("latency_ms") or {}).items()}
        except (TypeError, ValueError, AttributeError):
            raise MalformedReply(f"latency_ms: {record.get('latency_ms')!r}") from None
        return cls(
            request_id=str(_field(record, "request_id")),
            status=str(_field(record, "status")),
            gate=Gate.from_record(_field(record, "gate")),
            results=tuple(MemoryResult.from_record(r) for r in record.get("results") or ()),
            latency_ms=latency,
            error=ReplyError.from_record(error) if error is not None else None,
            served_at=_optional_moment(record.get("served_at"), "served_at"),
        )

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def rendered(self) -> str:
        """Every result's XML block, best first: what to put in a prompt."""
        return "\n".join(r.rendered for r in self.results)

    def to_json(self) -> dict[str, Any]:
        """The reply as JSON-ready values (times as ISO-8601 strings)."""
        return _jsonable(asdict(self))  # type: ignore[no-any-return]


def _factors(value: Any) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MalformedReply(f"factors is not a map: {value!r}")
    try:
        return {str(name): float(factor) for name, factor in value.items()}
    except (TypeError, ValueError):
        raise MalformedReply(f"a factor is not a number: {value!r}") from None


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value
