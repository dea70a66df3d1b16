-- Per-tenant rules that change at run time (no restart): half-lives per fact type, in seconds,
-- and authority per source system. Read by the query path and the rescoring timer.
CREATE TABLE tenant_rules (
    tenant_id  text             NOT NULL,
    kind       text             NOT NULL CHECK (kind IN ('half_life', 'authority')),
    name       text             NOT NULL,
    value      double precision NOT NULL CHECK (value > 0),
    updated_at timestamptz      NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, kind, name)
);

-- The time-dependent parts of trust, materialised by the rescoring timer for current versions:
-- recency (decay) and state consistency (e.g. pending > 48 h → escalated).
CREATE TABLE version_scores (
    version_id       uuid             PRIMARY KEY REFERENCES memory_versions (version_id),
    tenant_id        text             NOT NULL,
    recency          double precision NOT NULL,
    state            double precision NOT NULL,
    effective_status text             NOT NULL,
    scored_at        timestamptz      NOT NULL
);
CREATE INDEX version_scores_due ON version_scores (scored_at);
