"""Ports: the Protocols the handlers depend on, implemented by ``memstream.services.adapters``,
one module per concern — ``vectors`` (the index, the encoder), ``memory`` (ingest's unit of
work, the repository, changes, rules), ``search`` (keyword search, the gate's own-words look),
``serving`` (cache, replies, query log, metrics), ``ledger`` (rebuilds, audits, the topic reader),
``identity`` (credentials, nonces, refusals), ``erasure``, and ``errors``. Every name is
re-exported here, so ``from memstream.services.ports import X`` names the port, not its module.

Must not import any adapter nor any I/O library; only the domain and the stdlib.
"""

from memstream.services.ports.erasure import ErasureMark, ErasureRepository, PendingErasure
from memstream.services.ports.errors import AdapterError, TransientError
from memstream.services.ports.identity import Claim, CredentialStore, NonceStore, Refusal
from memstream.services.ports.ledger import (
    CopyMeta,
    Ledger,
    LedgerEvent,
    LedgerKey,
    OffsetRange,
    Refused,
    ReplayScope,
    TopicReader,
    TopicRecord,
)
from memstream.services.ports.memory import (
    BatchWrite,
    ChangeSink,
    DeadLetter,
    DueCursor,
    DueItem,
    DuePage,
    IndexTask,
    MemoryRepository,
    MemoryWrite,
    Position,
    Recorded,
    RulesRepository,
)
from memstream.services.ports.search import HeldTerms, KeywordHit, MemoryQueries, TermCounts
from memstream.services.ports.serving import (
    Cache,
    Metrics,
    NoMetrics,
    OutboundReply,
    QueryLog,
    ReplySink,
    SilentSink,
)
from memstream.services.ports.vectors import (
    Embedder,
    VectorFilter,
    VectorHit,
    VectorIndex,
    VectorPoint,
)

__all__ = [
    "AdapterError",
    "BatchWrite",
    "Cache",
    "ChangeSink",
    "Claim",
    "CopyMeta",
    "CredentialStore",
    "DeadLetter",
    "DueCursor",
    "DueItem",
    "DuePage",
    "Embedder",
    "ErasureMark",
    "ErasureRepository",
    "HeldTerms",
    "IndexTask",
    "KeywordHit",
    "Ledger",
    "LedgerEvent",
    "LedgerKey",
    "MemoryQueries",
    "MemoryRepository",
    "MemoryWrite",
    "Metrics",
    "NoMetrics",
    "NonceStore",
    "OffsetRange",
    "OutboundReply",
    "PendingErasure",
    "Position",
    "QueryLog",
    "Recorded",
    "Refusal",
    "Refused",
    "ReplayScope",
    "ReplySink",
    "RulesRepository",
    "SilentSink",
    "TermCounts",
    "TopicReader",
    "TopicRecord",
    "TransientError",
    "VectorFilter",
    "VectorHit",
    "VectorIndex",
    "VectorPoint",
]
