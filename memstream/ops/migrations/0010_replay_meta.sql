-- An audit copy's parameters (memstream replay --into-schema): one row, written by the replay
-- that builds the copy, read by --verify. In a live schema the table stays empty.
CREATE TABLE IF NOT EXISTS replay_meta (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    source text NOT NULL,
    tenants text[],
    until timestamptz,
    vectors text,
    updated_at timestamptz NOT NULL DEFAULT now()
);
