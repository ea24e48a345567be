-- Revision texts are prompts of a few KB to hundreds of KB: compress them with lz4 like the
-- records (0001). Delta bodies are small and mostly stay inline. Servers built without lz4
-- (PGlite) keep the default pglz.
DO $$
BEGIN
  ALTER TABLE revision_texts ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'lz4 is not available: revision texts keep the default TOAST compression';
END
$$;
