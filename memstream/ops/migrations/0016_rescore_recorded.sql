-- A rescoring pass after a complete one reads only what fell due since (see
-- services/adapters/postgres_rules.py): the transitions passed since that pass, from the two
-- partial indexes of migration 0014, and the versions recorded since, which may have been due
-- when they arrived (a backfilled complaint older than its escalation). This index finds the
-- latter; its predicate is the union of 0014's, with the same literals (the due query repeats
-- it so the planner can use it; tests/unit/test_rescoring.py checks them).
CREATE INDEX memory_versions_rescore_recorded ON memory_versions (recorded_at)
    WHERE is_current
      AND (valid_to IS NOT NULL
           OR (lower(btrim(status)) IN ('in_progress', 'new', 'open', 'pending')
               AND lower(fact_type) IN ('complaint', 'issue', 'refund', 'return', 'support_case', 'ticket')));
