-- Every retrieval as it was answered: the request, the gate's decision and reason, the results
-- with their scores, and the latency per stage — so that `memstream audit REQUEST_ID` shows
-- exactly what an agent was told and why, even after newer versions arrived.
CREATE TABLE query_log (
    id          bigserial   PRIMARY KEY,
    request_id  text        NOT NULL,
    tenant_id   text,
    answered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    status      text        NOT NULL,
    request     jsonb       NOT NULL,
    reply       jsonb       NOT NULL
);
CREATE INDEX query_log_request ON query_log (request_id);
CREATE INDEX query_log_tenant ON query_log (tenant_id, answered_at);
