"""The read path's vocabulary: retrieval requests, the candidates they consider, their scores.

``validate_request`` turns a raw request (a decoded Avro record or a JSON object) into a
``RetrievalRequest`` or raises ``InvalidRequest`` with a machine-readable code. ``Candidate`` is
one memory version a retriever found, ``Scores`` every number computed for it, ``ScoredResult``
what a reply carries. Pure: ``now`` is a parameter. Must not import any I/O library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memstream.services.domain.errors import InvalidRequest
from memstream.services.domain.model import Anchor, MemoryVersion
from memstream.services.domain.validation import parse_timestamp

# Codes, as they appear in RetrievalReply.error.code.
MISSING_TENANT = "missing_tenant"
MISSING_QUERY = "missing_query"
LIMIT_OUT_OF_RANGE = "limit_out_of_range"
BAD_TIME = "bad_time"
BAD_FIELD = "bad_field"

# Text never holds NUL: Postgres cannot store it, and no agent means it.
NUL = "\x00"
NUL_PROBLEM = "contains a NUL character (U+0000); remove it"

# Documented limits (README, "Retrieval requests").
DEFAULT_LIMIT = 10
MIN_LIMIT = 1
MAX_LIMIT = 50
MAX_QUERY_CHARS = 4096
MAX_ID_CHARS = 256
MAX_ANCHORS = 32
# as_of / known_at may lie a little ahead (clock skew between agent and service), not further:
# memstream holds nothing about the future.
MAX_FUTURE_SKEW = timedelta(days=1)

# The anchor type a request's user_id becomes, and the anchor types that already name a person.
USER_ANCHOR_TYPE = "customer"
PERSON_ANCHOR_TYPES = frozenset({"customer", "user"})


@dataclass(frozen=True, slots=True)
class RetrievalRequest:
    """A validated retrieval request.

    ``anchors`` are the entities the answer must be about; the ``user_id``, when given, is among
    them as ``("customer", user_id)`` (see ``validate_request``). ``active_entities`` and
    ``active_task`` are the conversation's context: they call for memory (gating) and stand in
    for anaphora ("that one", "它") when the ranking binds memories to entities.
    ``time_window`` is inclusive at both ends; ``deadline_ms`` is absolute, in epoch
    milliseconds (as in ``schemas/retrieval_request.avsc``). ``period_moment`` is not sent by
    the agent: it is the moment of the period the question names (``periods.valid_time``), at
    which each memory found is answered with the version valid then.
    """

    request_id: str
    tenant_id: str
    query: str
    user_id: str | None = None
    anchors: tuple[Anchor, ...] = ()
    active_task: str | None = None
    active_entities: tuple[Anchor, ...] = ()
    time_window: tuple[datetime, datetime] | None = None
    as_of: datetime | None = None
    known_at: datetime | None = None
    limit: int = DEFAULT_LIMIT
    force: bool = False
    reply_to: str = ""
    deadline_ms: int | None = None
    period_moment: datetime | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """One memory version considered for an answer, with what the retrievers said about it.

    ``vector_score`` is a cosine similarity and ``keyword_score`` a keyword similarity, both
    expected in [0, 1]; ``None`` means that retriever did not find the version.
    """

    version_id: str
    memory_key: str
    version: int
    content: str
    entity_type: str
    entity_id: str
    anchors: tuple[Anchor, ...]
    fact_type: str
    source_system: str
    status: str
    occurred_at: datetime
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    is_current: bool
    attributes: Mapping[str, str] = field(default_factory=dict)
    vector_score: float | None = None
    keyword_score: float | None = None

    @classmethod
    def from_version(
        cls,
        version: MemoryVersion,
        *,
        vector_score: float | None = None,
        keyword_score: float | None = None,
    ) -> Candidate:
        return cls(
            version_id=version.version_id,
            memory_key=version.memory_key,
            version=version.version,
            content=version.content,
            entity_type=version.entity_type,
            entity_id=version.entity_id,
            anchors=version.anchors,
            fact_type=version.fact_type,
            source_system=version.source_system,
            status=version.status,
            occurred_at=version.occurred_at,
            valid_from=version.valid_from,
            valid_to=version.valid_to,
            recorded_at=version.recorded_at,
            is_current=version.is_current,
            attributes=dict(version.attributes),
            vector_score=vector_score,
            keyword_score=keyword_score,
        )


@dataclass(frozen=True, slots=True)
class Scores:
    """Every score of one result, each in [0, 1]; ``fused`` is the relevance, ``final`` ranks."""

    vector: float = 0.0
    keyword: float = 0.0
    fused: float = 0.0
    authority: float = 0.0
    recency: float = 0.0
    binding: float = 0.0
    state: float = 0.0
    cross_validation: float = 0.0
    trust: float = 0.0
    final: float = 0.0


@dataclass(frozen=True, slots=True)
class ScoredResult:
    """A candidate with its scores, the version_ids it conflicts with, and its rendered block.

    ``binding_kind`` names how it binds to the request (``trust.entity_binding``, and in a
    personal request ``personal.personal_binding``). ``factors`` names each rule that moved
    its ``final`` and the multiplier it applied (``yielding``): final = relevance^(1−α) ·
    trust^α × their product, and results are served in the order of ``final`` alone.
    """

    candidate: Candidate
    scores: Scores
    conflicts_with: tuple[str, ...] = ()
    rendered: str = ""
    effective_status: str = ""
    binding_kind: str = ""
    factors: tuple[tuple[str, float], ...] = ()


def _bad(field_name: str, detail: str) -> InvalidRequest:
    return InvalidRequest(BAD_FIELD, f"field {field_name!r} {detail}")


def _optional_text(raw: Mapping[str, Any], name: str, *, limit: int = MAX_ID_CHARS) -> str | None:
    value = raw.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(name, f"must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise _bad(name, f"is longer than {limit} characters")
    if NUL in value:
        raise _bad(name, NUL_PROBLEM)
    return value.strip() or None


def _anchor_list(value: Any, name: str) -> tuple[Anchor, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise _bad(name, "must be a list of {type, id}")
    if len(value) > MAX_ANCHORS:
        raise _bad(name, f"has more than {MAX_ANCHORS} anchors")
    anchors: dict[Anchor, None] = {}
    for item in value:
        if not isinstance(item, Mapping):
            raise _bad(name, f"holds {item!r}, not a {{type, id}} object")
        kind, ident = item.get("type"), item.get("id")
        if not isinstance(kind, str) or not kind.strip() or ident is None or ident == "":
            raise _bad(name, f"holds {item!r}, which needs a 'type' and an 'id'")
        text_id = str(ident).strip()
        if NUL in kind or NUL in text_id:
            raise _bad(name, f"holds an anchor whose type or id {NUL_PROBLEM}")
        if not text_id or len(text_id) > MAX_ID_CHARS or len(kind) > MAX_ID_CHARS:
            raise _bad(name, f"holds {item!r}, whose type or id is empty or too long")
        anchors.setdefault(Anchor(kind.strip(), text_id), None)
    return tuple(anchors)


def _moment(value: Any, name: str) -> datetime:
    try:
        return parse_timestamp(value)
    except (ValueError, OverflowError, OSError) as exc:
        raise InvalidRequest(BAD_TIME, f"field {name!r}: {exc}") from None


def _optional_moment(raw: Mapping[str, Any], name: str, now: datetime) -> datetime | None:
    value = raw.get(name)
    if value is None or value == "":
        return None
    moment = _moment(value, name)
    if moment > now + MAX_FUTURE_SKEW:
        raise InvalidRequest(
            BAD_TIME, f"field {name!r} is {moment.isoformat()}, more than {MAX_FUTURE_SKEW} ahead"
        )
    return moment


def _time_window(value: Any) -> tuple[datetime, datetime] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        bounds: Any = (value.get("from"), value.get("to"))
    elif isinstance(value, list | tuple) and len(value) == 2:
        bounds = value
    else:
        raise InvalidRequest(BAD_TIME, f"time_window must be [from, to], got {value!r}")
    start = _moment(bounds[0], "time_window.from")
    end = _moment(bounds[1], "time_window.to")
    if start > end:
        raise InvalidRequest(
            BAD_TIME, f"time_window from {start.isoformat()} is after to {end.isoformat()}"
        )
    return start, end


def _limit(value: Any) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if isinstance(value, bool):
        raise _bad("limit", "must be an integer")
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if not isinstance(value, int):
        raise _bad("limit", f"must be an integer, got {value!r}")
    if not MIN_LIMIT <= value <= MAX_LIMIT:
        raise InvalidRequest(
            LIMIT_OUT_OF_RANGE, f"limit {value} is outside {MIN_LIMIT}..{MAX_LIMIT}"
        )
    return value


def _with_user(anchors: tuple[Anchor, ...], user_id: str | None) -> tuple[Anchor, ...]:
    """Add ``("customer", user_id)`` unless a customer/user anchor already names the user.

    The user an agent speaks for is, in the CRM/e-commerce events memstream ingests, the customer
    the events are about: anchoring the request to them is what keeps another customer's record
    out of the answer. An anchor of type "user" with the same id already says so; adding a
    second anchor for the same person would only duplicate it.
    """
    if user_id is None:
        return anchors
    for anchor in anchors:
        if anchor.type.casefold() in PERSON_ANCHOR_TYPES and anchor.id == user_id:
            return anchors
    return (*anchors, Anchor(USER_ANCHOR_TYPE, user_id))


def validate_request(raw: Mapping[str, Any], now: datetime) -> RetrievalRequest:
    """Check every field of a raw request; raise ``InvalidRequest`` naming the first problem.

    Fields: ``request_id`` (required), ``tenant_id``, ``query``, ``user_id``, ``anchors`` (or
    ``entities``: ``[{type, id}]``), ``context`` (``active_task``, ``active_entities``,
    ``time_window``; each also accepted at the top level, which wins), ``as_of``, ``known_at``,
    ``limit`` (1..50, default 10), ``force``, ``reply_to``, ``deadline_ms``. Timestamps are ISO-8601
    with a timezone, epoch milliseconds or aware datetimes; ``as_of``/``known_at`` may not lie
    more than a day after ``now``. The user_id also becomes an anchor (see ``_with_user``).
    """
    if not isinstance(raw, Mapping):
        raise InvalidRequest(BAD_FIELD, f"a request is an object, got {type(raw).__name__}")
    tenant_id = _optional_text(raw, "tenant_id")
    if tenant_id is None:
        raise InvalidRequest(MISSING_TENANT, "field 'tenant_id' is missing or empty")
    query_text = _optional_text(raw, "query", limit=MAX_QUERY_CHARS)
    if query_text is None:
        raise InvalidRequest(MISSING_QUERY, "field 'query' is missing or empty")
    request_id = _optional_text(raw, "request_id")
    if request_id is None:
        raise _bad("request_id", "is missing or empty")

    context = raw.get("context") or {}
    if not isinstance(context, Mapping):
        raise _bad("context", "must be an object")
    merged: dict[str, Any] = {**context, **{k: v for k, v in raw.items() if v is not None}}

    user_id = _optional_text(raw, "user_id")
    anchors = _anchor_list(raw.get("anchors", raw.get("entities")), "anchors")
    force = raw.get("force", False)
    if force is None:
        force = False
    if not isinstance(force, bool):
        raise _bad("force", f"must be true or false, got {force!r}")
    deadline = raw.get("deadline_ms")
    if deadline is not None and (
        isinstance(deadline, bool) or not isinstance(deadline, int) or deadline <= 0
    ):
        raise _bad("deadline_ms", f"must be a positive integer, got {deadline!r}")
    return RetrievalRequest(
        request_id=request_id,
        tenant_id=tenant_id,
        query=query_text,
        user_id=user_id,
        anchors=_with_user(anchors, user_id),
        active_task=_optional_text(merged, "active_task", limit=MAX_QUERY_CHARS),
        active_entities=_anchor_list(merged.get("active_entities"), "active_entities"),
        time_window=_time_window(merged.get("time_window")),
        as_of=_optional_moment(raw, "as_of", now),
        known_at=_optional_moment(raw, "known_at", now),
        limit=_limit(raw.get("limit")),
        force=force,
        reply_to=_optional_text(raw, "reply_to") or "",
        deadline_ms=deadline,
    )
