// V8 heap sizes the product runs with (npm scripts, Dockerfile NODE_OPTIONS; a test keeps
// them in step). The indexer's working set is bounded (queue and batch by bytes), so a
// small heap is enough, and without a cap V8 lets garbage pile up to many times that before
// collecting: RSS of 500-700 MB instead of ~300 MB during a long replay. The young
// generation is capped too: V8 grows it while loading the module graph and keeps the
// pages pooled afterwards, outside heapTotal but in RSS (measured on importing
// drizzle-orm/postgres-js alone: RSS 179 MB with 16 MB semi-spaces, 140 MB with 4).
export const RUNTIME_NODE_FLAGS = ['--max-semi-space-size=4', '--max-old-space-size=256']
