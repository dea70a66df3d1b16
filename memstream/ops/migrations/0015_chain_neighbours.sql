-- Placing an event reads only the versions it can change (services/domain/versioning.py,
-- ``neighbours``): the memory's highest version number (the UNIQUE constraint's index), its
-- latest in valid time, and the versions just before and after the event's occurred_at. This
-- index finds each of them in one descent, whatever the length of the chain; it also serves
-- every lookup by (tenant_id, memory_key), which the index it replaces did.
CREATE INDEX memory_versions_chain ON memory_versions (tenant_id, memory_key, valid_from, version);
DROP INDEX memory_versions_memory;
