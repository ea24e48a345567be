-- visible_counts (src/db/schema.ts) kept by the record tables themselves: after every
-- statement that writes one of them, its rows' delta of visible rows per flag set is added
-- in the same transaction, so the counts are exact at every commit whoever writes (the
-- indexer's upserts, takedowns, flag recomputes, purges) and /v1/stats reads a few rows
-- instead of scanning every visible one. Statement triggers with transition tables: one
-- small upsert per statement, not one per row. Rows are upserted in flags order so two
-- writers lock them in the same order. The counts start from the rows already there; the
-- triggers exist first, in the same transaction, so no write is missed or counted twice.
CREATE FUNCTION visible_counts_prompts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM visible_counts WHERE tbl = TG_TABLE_NAME::text;
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO visible_counts AS c (tbl, flags, n)
    SELECT TG_TABLE_NAME::text, flags, count(*) FROM new_rows WHERE NOT deleted AND NOT hidden
    GROUP BY 2 ORDER BY 2
    ON CONFLICT (tbl, flags) DO UPDATE SET n = c.n + excluded.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO visible_counts AS c (tbl, flags, n)
    SELECT TG_TABLE_NAME::text, flags, -count(*) FROM old_rows WHERE NOT deleted AND NOT hidden
    GROUP BY 2 ORDER BY 2
    ON CONFLICT (tbl, flags) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    INSERT INTO visible_counts AS c (tbl, flags, n)
    SELECT TG_TABLE_NAME::text, d.flags, sum(d.n) FROM (
      SELECT flags AS flags, 1 AS n FROM new_rows WHERE NOT deleted AND NOT hidden
      UNION ALL
      SELECT flags, -1 FROM old_rows WHERE NOT deleted AND NOT hidden
    ) d GROUP BY d.flags HAVING sum(d.n) <> 0 ORDER BY d.flags
    ON CONFLICT (tbl, flags) DO UPDATE SET n = c.n + excluded.n;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION visible_counts_records() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM visible_counts WHERE tbl = TG_TABLE_NAME::text;
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO visible_counts AS c (tbl, flags, n)
    SELECT TG_TABLE_NAME::text, 0, count(*) FROM new_rows WHERE NOT deleted AND NOT hidden
    GROUP BY 2 ORDER BY 2
    ON CONFLICT (tbl, flags) DO UPDATE SET n = c.n + excluded.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO visible_counts AS c (tbl, flags, n)
    SELECT TG_TABLE_NAME::text, 0, -count(*) FROM old_rows WHERE NOT deleted AND NOT hidden
    GROUP BY 2 ORDER BY 2
    ON CONFLICT (tbl, flags) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    INSERT INTO visible_counts AS c (tbl, flags, n)
    SELECT TG_TABLE_NAME::text, d.flags, sum(d.n) FROM (
      SELECT 0 AS flags, 1 AS n FROM new_rows WHERE NOT deleted AND NOT hidden
      UNION ALL
      SELECT 0, -1 FROM old_rows WHERE NOT deleted AND NOT hidden
    ) d GROUP BY d.flags HAVING sum(d.n) <> 0 ORDER BY d.flags
    ON CONFLICT (tbl, flags) DO UPDATE SET n = c.n + excluded.n;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER visible_counts_insert AFTER INSERT ON prompts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_prompts();
--> statement-breakpoint
CREATE TRIGGER visible_counts_update AFTER UPDATE ON prompts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_prompts();
--> statement-breakpoint
CREATE TRIGGER visible_counts_delete AFTER DELETE ON prompts REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_prompts();
--> statement-breakpoint
CREATE TRIGGER visible_counts_truncate AFTER TRUNCATE ON prompts FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_prompts();
--> statement-breakpoint
CREATE TRIGGER visible_counts_insert AFTER INSERT ON conversations REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_records();
--> statement-breakpoint
CREATE TRIGGER visible_counts_update AFTER UPDATE ON conversations REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_records();
--> statement-breakpoint
CREATE TRIGGER visible_counts_delete AFTER DELETE ON conversations REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_records();
--> statement-breakpoint
CREATE TRIGGER visible_counts_truncate AFTER TRUNCATE ON conversations FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_records();
--> statement-breakpoint
CREATE TRIGGER visible_counts_insert AFTER INSERT ON agents REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_records();
--> statement-breakpoint
CREATE TRIGGER visible_counts_update AFTER UPDATE ON agents REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_records();
--> statement-breakpoint
CREATE TRIGGER visible_counts_delete AFTER DELETE ON agents REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_records();
--> statement-breakpoint
CREATE TRIGGER visible_counts_truncate AFTER TRUNCATE ON agents FOR EACH STATEMENT EXECUTE FUNCTION visible_counts_records();
--> statement-breakpoint
INSERT INTO visible_counts (tbl, flags, n)
SELECT 'prompts', flags, count(*) FROM prompts WHERE NOT deleted AND NOT hidden GROUP BY flags
UNION ALL
SELECT 'conversations', 0, count(*) FROM conversations WHERE NOT deleted AND NOT hidden
UNION ALL
SELECT 'agents', 0, count(*) FROM agents WHERE NOT deleted AND NOT hidden;
