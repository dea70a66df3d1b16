-- The 'simple' text-search parser glues a run of letters or digits to the CJK characters
-- around it ("订单号A-2002已发货" gives the tokens '订单号a' and '-2002已发货'), so the tsvector
-- could not find an id written between Chinese words, and keyword search had to look for every
-- id-like term with ILIKE as well: a scan of the whole tenant wherever pg_trgm cannot serve the
-- pattern ("c-12") or the planner prefers a sequential scan to re-checking ~1,000 trigram hits
-- ("usb-c": 14 of the 21 ms of one search at 10,000 versions). The tsvector now sees a space at
-- every boundary between a CJK character and anything else, and ILIKE is left to the exact terms
-- the parser cannot keep whole (phrases, quoted strings). The ranges must stay equal to those of
-- cjk_grams() (0002) and ``_CJK`` in services/adapters/postgres_queries.py.

CREATE FUNCTION cjk_spaced(t text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN regexp_replace(
    regexp_replace(
        t,
        '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff])'
        '([^\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff[:space:]])',
        '\1 \2', 'g'),
    '([^\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff[:space:]])'
    '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff])',
    '\1 \2', 'g');

DROP INDEX memory_versions_tsv;
ALTER TABLE memory_versions DROP COLUMN tsv;
ALTER TABLE memory_versions ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', cjk_spaced(search_text))) STORED;
CREATE INDEX memory_versions_tsv ON memory_versions USING gin (tsv);
