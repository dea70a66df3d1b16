-- Erasure of a data subject. The ledger keeps its shape (ids, positions, timestamps) while the
-- personal content of erased versions and ledger rows is replaced by a tombstone: when, under
-- which erasure, and the sha256 of what was erased (so an auditor holding a copy can prove what
-- was removed, and nobody can read it back). The erasure log records each erasure without
-- personal data: the subject and memory keys appear only as digests.

ALTER TABLE memory_versions
    ADD COLUMN erased_at      timestamptz,
    ADD COLUMN erasure_id     uuid,
    ADD COLUMN content_digest text;
ALTER TABLE event_ledger
    ADD COLUMN erased_at      timestamptz,
    ADD COLUMN erasure_id     uuid,
    ADD COLUMN payload_digest text;

-- Replays and rebuilds skip erased events by id; the partial index keeps that test cheap.
CREATE INDEX event_ledger_erased ON event_ledger (tenant_id, event_id) WHERE erased_at IS NOT NULL;

CREATE TABLE erasure_log (
    erasure_id     uuid        PRIMARY KEY,
    tenant_id      text        NOT NULL,
    requested_by   text        NOT NULL,           -- the actor / credential id that asked
    reason         text        NOT NULL DEFAULT '',
    scope_kind     text        NOT NULL CHECK (scope_kind IN ('entity', 'memory')),
    subject_digest text        NOT NULL,           -- sha256 of the scope, never the subject
    requested_at   timestamptz NOT NULL,
    erased_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    completed_at   timestamptz,                    -- vectors, caches and VACUUM done
    counts         jsonb       NOT NULL,
    digests        jsonb       NOT NULL,           -- {version_id: sha256 of the erased content}
    version_ids    uuid[]      NOT NULL            -- what the vector store and caches must lose
);
CREATE INDEX erasure_log_tenant ON erasure_log (tenant_id, erased_at);
CREATE INDEX erasure_log_pending ON erasure_log (tenant_id) WHERE completed_at IS NULL;
