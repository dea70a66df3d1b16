"""The composition root: the one place that builds concrete adapters from settings.

Two halves, cut where the process differs: ``worker`` builds a running worker (the query path,
ingest, the indexer, the model and its encoders); ``tools`` builds what the one-shot commands
need (repositories, status readers, rebuild and erasure tools, the offline index). Every name is
re-exported here: callers say ``bootstrap.build`` or ``bootstrap.event_status``.

Nothing here runs at import.
"""

from memstream.services.adapters.postgres_credentials import (
    CredentialError,
    PostgresCredentialStore,
)
from memstream.services.adapters.postgres_status import Ident, PostgresStatus
from memstream.services.bootstrap.tools import (
    Forgetting,
    Stores,
    copy_index,
    database_bytes,
    dead_letters,
    erasure_bench_points,
    erasure_bench_store,
    event_status,
    model_dimension,
    offline_forgetter,
    offline_index,
    offline_rescorer,
    open_repository,
    postgres_version,
    rebuild_tools,
    rescore_bench_store,
    shard_budget,
    stores,
)
from memstream.services.bootstrap.worker import (
    EMBED_BATCH_SIZE,
    Container,
    EncoderMismatchError,
    build,
    build_index,
    check_index_encoder,
    credential_store,
    export_encoder,
    index_encoder,
    load_embedder,
    nonce_store,
    resolve_model_path,
    service_key,
    utcnow,
)

__all__ = [
    "EMBED_BATCH_SIZE",
    "Container",
    "CredentialError",
    "EncoderMismatchError",
    "Forgetting",
    "Ident",
    "PostgresCredentialStore",
    "PostgresStatus",
    "Stores",
    "build",
    "build_index",
    "check_index_encoder",
    "copy_index",
    "credential_store",
    "database_bytes",
    "dead_letters",
    "erasure_bench_points",
    "erasure_bench_store",
    "event_status",
    "export_encoder",
    "index_encoder",
    "load_embedder",
    "model_dimension",
    "nonce_store",
    "offline_forgetter",
    "offline_index",
    "offline_rescorer",
    "open_repository",
    "postgres_version",
    "rebuild_tools",
    "rescore_bench_store",
    "resolve_model_path",
    "service_key",
    "shard_budget",
    "stores",
    "utcnow",
]
