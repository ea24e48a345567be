-- A stored cursor says what it counts (src/model/cursor.ts): `seq` or `time_us`. Rows written
-- before this column were bare numbers, and each is given the kind the code that wrote it
-- read it as: a replay cursor was always a time_us and a firehose one always a seq, whatever
-- its size; a Jetstream one held either (v1 stored time_us, or the seq a v2 server adds to
-- v1 frames; v2 stored seqs, or resumed from a time_us it was given), and the code told them
-- apart by size: at or above 1e15 (unix microseconds since 2001) a time_us, below it a seq.
-- This is the only place that size test is still allowed: the rows it reads have nothing
-- else to say what they are, and every row written from now on states its kind.
ALTER TABLE "ingest_cursors" ADD COLUMN "kind" text;--> statement-breakpoint
UPDATE "ingest_cursors" SET "kind" = CASE
  WHEN "source" = 'replay' THEN 'time_us'
  WHEN "source" = 'firehose' THEN 'seq'
  WHEN "cursor" >= 1000000000000000 THEN 'time_us'
  ELSE 'seq'
END;--> statement-breakpoint
ALTER TABLE "ingest_cursors" ALTER COLUMN "kind" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "ingest_cursors" ADD CONSTRAINT "ingest_cursors_kind" CHECK ("ingest_cursors"."kind" IN ('seq', 'time_us'));
