import { getHeapStatistics, setFlagsFromString } from 'node:v8'

// V8 heap sizes the product runs with (npm scripts, Dockerfile NODE_OPTIONS; a test keeps
// them in step). The indexer's working set is bounded (queue and batch by bytes), so a
// small heap is enough, and without a cap V8 lets garbage pile up to many times that before
// collecting: RSS of 500-700 MB instead of ~300 MB during a long replay. The young
// generation is capped too: V8 grows it while loading the module graph and keeps the
// pages pooled afterwards, outside heapTotal but in RSS (measured on importing
// drizzle-orm/postgres-js alone: RSS 179 MB with 16 MB semi-spaces, 140 MB with 4).
export const RUNTIME_NODE_FLAGS = ['--max-semi-space-size=4', '--max-old-space-size=256']

/**
 * How far `serve` lets the old generation grow past what the last full collection kept.
 * V8 takes a heap cap of 256 MB or less for a small device and allows only 1.3x live
 * (MemoryController::MaxGrowingFactor, src/heap/heap-controller.cc; 4x without a cap), so
 * a reader keeping ~60 MB live ran a mark-compact every few hundred milliseconds. At 2x,
 * the cap still bounds the heap: bench:read-api, two runs each on one 500,000-prompt
 * database, uniform lookups 1.24-1.34x the plain server against 1.01-1.02x, server RSS
 * 356 against 316 MB. The writer is left at V8's choice: there 2x gave +10% events/s for
 * +56 MB of peak RSS and broke the memory scenario's growth target (bench/README.md).
 */
const SERVE_HEAP_GROWING_PERCENT = 100

/** Above this cap V8 already allows 2x or more (its factor scales up to 4x at 2 GiB). */
const SMALL_HEAP_BYTES = 2048 * 1024 * 1024

/** The V8 flag `serve` sets for a heap limit, or null when V8's own factor is as high. */
export function serveHeapGrowingFlag(heapLimitBytes: number): string | null {
  return heapLimitBytes < SMALL_HEAP_BYTES
    ? `--heap-growing-percent=${SERVE_HEAP_GROWING_PERCENT}`
    : null
}

/**
 * Set at run time because NODE_OPTIONS refuses the flag (Docker passes the heap caps
 * there); V8 reads it at every full collection, so setting it before the server starts
 * is in time.
 */
export function applyServeHeapGrowing(): string | null {
  const flag = serveHeapGrowingFlag(getHeapStatistics().heap_size_limit)
  if (flag) setFlagsFromString(flag)
  return flag
}
