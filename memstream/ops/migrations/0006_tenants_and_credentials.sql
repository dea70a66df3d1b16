-- Who may ask or write. A tenant is whoever holds one of its credentials; the payload's
-- tenant_id is never trusted. Secrets are never stored: only a SHA-256 of the 256-bit random
-- secret (for bearer checks) and the Ed25519 public key derived from it (for signed tokens).
-- The tenant registry is the existing `tenants` table (0001): `memstream tenants create`
-- checks the id's form (lower-case, no spaces) before inserting; rows the ledger created for
-- earlier, unauthenticated events stay as they are.
ALTER TABLE tenants ADD COLUMN name text NOT NULL DEFAULT '';

CREATE TABLE credentials (
    key_id       text        PRIMARY KEY CHECK (key_id ~ '^k[0-9a-f]{16}$'),
    tenant_id    text        NOT NULL REFERENCES tenants (tenant_id),
    role         text        NOT NULL CHECK (role IN ('agent', 'producer', 'admin')),
    sources      text[]      NOT NULL DEFAULT '{}',
    secret_hash  bytea       NOT NULL UNIQUE CHECK (length(secret_hash) = 32),
    public_key   bytea       NOT NULL CHECK (length(public_key) = 32),
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    replaced_by  text        REFERENCES credentials (key_id),
    CHECK (role = 'producer' OR sources = '{}'),
    CHECK (role <> 'producer' OR cardinality(sources) > 0)
);
CREATE INDEX credentials_tenant ON credentials (tenant_id);

-- Every refused request or event: which key (if any) and why; the client is only told
-- unauthenticated / forbidden.
CREATE TABLE auth_audit (
    id          bigserial   PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    kind        text        NOT NULL,
    code        text        NOT NULL,
    reason      text        NOT NULL,
    key_id      text,
    tenant_id   text,
    subject_id  text,
    topic       text,
    partition   integer,
    "offset"    bigint
);
CREATE INDEX auth_audit_at ON auth_audit (at);
