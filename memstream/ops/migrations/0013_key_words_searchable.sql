-- Keyword search also sees the words of a memory's key (services.domain.text.key_words): runs of
-- ASCII letters of at least 3, lower-cased, each once, in order ("customer:C-1|contact_preference"
-- → "customer contact preference"), appended to search_text after the content and attributes. A
-- key names what its memory is about; a question that names it finds that memory rather than a
-- neighbour whose text says the same. Versions written from now on get the words from the worker;
-- this gives them to the versions written before. Erased versions keep their empty search_text.
UPDATE memory_versions AS m
SET search_text = concat_ws(' ', nullif(m.search_text, ''), nullif(k.words, ''))
FROM (
    SELECT v.version_id,
           (SELECT string_agg(w.word, ' ' ORDER BY w.first)
            FROM (SELECT lower(part) AS word, min(n) AS first
                  FROM regexp_split_to_table(v.memory_key, '[^A-Za-z]+') WITH ORDINALITY AS p(part, n)
                  WHERE length(part) >= 3
                  GROUP BY lower(part)) AS w) AS words
    FROM memory_versions AS v
    WHERE v.erased_at IS NULL
) AS k
WHERE m.version_id = k.version_id AND k.words IS NOT NULL;
