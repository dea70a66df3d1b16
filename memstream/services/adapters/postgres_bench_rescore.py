"""The rescoring bench's store, written in bulk (SQL, no model). Used only by
``memstream bench rescore``: one tenant's current versions, one in 100 a pending complaint
(occurred over the last ten days), the rest notes, then VACUUM ANALYZE.
"""

from __future__ import annotations

import psycopg

_STORE = """
INSERT INTO tenants (tenant_id) VALUES (%(t)s) ON CONFLICT DO NOTHING;
INSERT INTO memory_versions (version_id, tenant_id, memory_key, version, event_id, entity_type,
    entity_id, entities, anchors, fact_type, content, attributes, search_text, source_system,
    status, op, occurred_at, valid_from, recorded_at, is_current, indexed_at)
SELECT md5('v' || i)::uuid, %(t)s, 'm:' || i, 1, 'e:' || i, 'customer', 'C-' || i %% 5000, '[]',
    ARRAY['customer:C-' || i %% 5000], CASE WHEN i %% 100 = 0 THEN 'complaint' ELSE 'note' END,
    'Customer note ' || i, '{}', 'Customer note ' || i, 'crm',
    CASE WHEN i %% 100 = 0 THEN 'pending' ELSE 'active' END, 'UPSERT',
    now() - make_interval(secs => (i * 864000.0 / %(total)s)),
    now() - make_interval(secs => (i * 864000.0 / %(total)s)), now(), true, now()
FROM generate_series(0, %(total)s - 1) AS i
"""


def write_store(dsn: str, tenant: str, total: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in _STORE.split(";\n"):
            conn.execute(statement.encode(), {"t": tenant, "total": total})
        conn.execute("VACUUM ANALYZE")
