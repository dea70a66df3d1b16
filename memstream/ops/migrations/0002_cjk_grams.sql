-- CJK n-grams for keyword search. The 'simple' text-search parser does not segment Chinese (a
-- run of Han characters is one token) and pg_trgm cannot use a two-character pattern such as
-- '%退货%', so the unigrams and bigrams of every CJK run (Han, Hiragana, Katakana, Hangul) get a
-- GIN index of their own. The character ranges must stay equal to ``_CJK`` in
-- services/adapters/postgres_queries.py, which builds the query side. The function costs ~15 us
-- a row: its declared COST makes the planner reach CJK candidates through the index and never
-- evaluate it row by row over a whole tenant.

CREATE FUNCTION cjk_grams(t text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 10000
RETURN ARRAY(
    SELECT DISTINCT substr(r.m[1], i, g.n)
    FROM regexp_matches(t, '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+', 'g') AS r(m)
    CROSS JOIN LATERAL generate_series(1, char_length(r.m[1])) AS i
    CROSS JOIN (VALUES (1), (2)) AS g(n)
    WHERE i + g.n - 1 <= char_length(r.m[1])
);

CREATE INDEX memory_versions_cjk ON memory_versions USING gin (cjk_grams(search_text));
