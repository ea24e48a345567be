// V8 heap sizes the product runs with (npm scripts, Dockerfile NODE_OPTIONS; a test keeps
// them in step). The indexer's working set is bounded (queue and batch by bytes), so a
// small heap is enough, and without a cap V8 lets garbage pile up to many times that before
// collecting: RSS of 500-700 MB instead of ~300 MB during a long replay. The young
// generation is capped too: V8 grows it to 128 MB while loading the module graph.
export const RUNTIME_NODE_FLAGS = ['--max-semi-space-size=16', '--max-old-space-size=256']
