-- Rescoring visits only the versions whose state the clock can change (see
-- services/domain/rescoring.py): open matters, which escalate `escalate_after` their
-- occurred_at, and versions with a valid_to, which are superseded then. Recency is computed by
-- every query and no longer rescored. The literals mirror StateRules' defaults
-- (tests/unit/test_rescoring.py checks them): the due query repeats them so the planner can use
-- these partial indexes.
CREATE INDEX memory_versions_open_matters ON memory_versions (occurred_at)
    WHERE is_current
      AND lower(btrim(status)) IN ('in_progress', 'new', 'open', 'pending')
      AND lower(fact_type) IN ('complaint', 'issue', 'refund', 'return', 'support_case', 'ticket');
CREATE INDEX memory_versions_expiring ON memory_versions (valid_to)
    WHERE is_current AND valid_to IS NOT NULL;
