-- Prompts indexed before search_vector existed get theirs once, here; afterwards the indexer
-- writes it with every record from the words it finds (src/indexer/search-words.ts). This is
-- the same rule in Postgres's regexes (src/db/search-queries.ts, searchVectorOf).
UPDATE prompts SET search_vector = array_to_tsvector(ARRAY(SELECT DISTINCT lower(m[1])
  FROM regexp_matches(CASE WHEN jsonb_typeof(record->'content') = 'string'
    THEN left(record->>'content', 200000) ELSE '' END, '([[:alnum:]]+)', 'g') m
  WHERE length(m[1]) <= 100))
WHERE NOT deleted AND search_vector IS NULL;
