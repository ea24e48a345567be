-- Records are JSON of a few KB to tens of KB, so nearly every one is compressed into TOAST on
-- write. lz4 compresses several times faster than the default pglz, which made pglz the
-- largest single cost of ingesting prompts. Servers built without lz4 (PGlite) keep pglz;
-- this changes only how new values are written, and old ones stay readable either way.
DO $$
BEGIN
  ALTER TABLE prompts ALTER COLUMN record SET COMPRESSION lz4;
  ALTER TABLE conversations ALTER COLUMN record SET COMPRESSION lz4;
  ALTER TABLE agents ALTER COLUMN record SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'lz4 is not available: records keep the default TOAST compression';
END
$$;
