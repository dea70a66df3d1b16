-- The event ledger (every accepted event, once, with where it came from) and the immutable
-- memory versions derived from it. Postgres is the source of truth; vectors and caches are
-- rebuilt from these two tables.

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

CREATE TABLE tenants (
    tenant_id   text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE event_ledger (
    tenant_id   text        NOT NULL,
    event_id    text        NOT NULL,
    memory_key  text        NOT NULL,
    op          text        NOT NULL,
    version_id  uuid        NOT NULL,
    outcome     text        NOT NULL,           -- current | late | retracted
    topic       text        NOT NULL,
    "partition" integer     NOT NULL,
    "offset"    bigint      NOT NULL,
    payload     jsonb       NOT NULL,           -- the validated event, as published
    received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, event_id)
);
CREATE INDEX event_ledger_position ON event_ledger (topic, "partition", "offset");
CREATE INDEX event_ledger_received ON event_ledger (received_at);

CREATE TABLE memory_versions (
    version_id    uuid        PRIMARY KEY,
    tenant_id     text        NOT NULL REFERENCES tenants (tenant_id),
    memory_key    text        NOT NULL,
    version       integer     NOT NULL,
    parent_id     uuid        REFERENCES memory_versions (version_id),
    event_id      text        NOT NULL,
    entity_type   text        NOT NULL,
    entity_id     text        NOT NULL,
    entities      jsonb       NOT NULL DEFAULT '[]',
    anchors       text[]      NOT NULL,         -- 'type:id' of the entity and every extra anchor
    fact_type     text        NOT NULL,
    content       text        NOT NULL,
    attributes    jsonb       NOT NULL DEFAULT '{}',
    search_text   text        NOT NULL,         -- content + attribute values, for keyword search
    source_system text        NOT NULL,
    status        text        NOT NULL,
    op            text        NOT NULL,
    occurred_at   timestamptz NOT NULL,
    valid_from    timestamptz NOT NULL,
    valid_to      timestamptz,
    recorded_at   timestamptz NOT NULL,
    superseded_at timestamptz,
    is_current    boolean     NOT NULL,
    indexed_at    timestamptz,                  -- set once the vector store holds this version
    index_dirty   boolean     NOT NULL DEFAULT false, -- derived state changed since indexed
    tsv           tsvector    GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED,
    UNIQUE (tenant_id, memory_key, version)
);
CREATE INDEX memory_versions_memory ON memory_versions (tenant_id, memory_key);
CREATE INDEX memory_versions_entity ON memory_versions (tenant_id, entity_type, entity_id);
CREATE INDEX memory_versions_anchors ON memory_versions USING gin (anchors);
CREATE INDEX memory_versions_current ON memory_versions (tenant_id, fact_type) WHERE is_current;
CREATE INDEX memory_versions_valid ON memory_versions (tenant_id, valid_from, valid_to);
CREATE INDEX memory_versions_recorded ON memory_versions (tenant_id, recorded_at);
CREATE INDEX memory_versions_unindexed ON memory_versions (recorded_at)
    WHERE indexed_at IS NULL OR index_dirty;
CREATE INDEX memory_versions_tsv ON memory_versions USING gin (tsv);
CREATE INDEX memory_versions_trgm ON memory_versions USING gin (search_text public.gin_trgm_ops);

-- Dead letters are kept here as well as on the DLQ topic, so that nothing is lost with a
-- memory-only broker and `publish --wait` can account for every event it sent.
CREATE TABLE dead_letters (
    id          bigserial   PRIMARY KEY,
    reason      text        NOT NULL,
    detail      text        NOT NULL,
    tenant_id   text,
    event_id    text,
    topic       text        NOT NULL,
    "partition" integer     NOT NULL,
    "offset"    bigint      NOT NULL,
    original    bytea,
    failed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (topic, "partition", "offset")
);
CREATE INDEX dead_letters_event ON dead_letters (tenant_id, event_id);
