import { fileURLToPath } from 'node:url'
import { getHeapStatistics, setFlagsFromString } from 'node:v8'

// The V8 flags the product runs with (the npm scripts; the entry adds any missing): a small
// heap, as the indexer's working set is bounded, and wasm on Liftoff, as the optimizing tier
// costs embedded PGlite memory (bench/README.md, "Figures behind the defaults" and "PGlite on
// Liftoff").
export const RUNTIME_NODE_FLAGS = [
  '--max-semi-space-size=4',
  '--max-old-space-size=256',
  '--liftoff-only',
]

/**
 * The shipped flags this process was started without. One given by the operator, as a flag
 * or in NODE_OPTIONS and with any value, counts as given: it is theirs to choose.
 */
export function missingRuntimeFlags(execArgv: readonly string[], nodeOptions: string): string[] {
  const nameOf = (flag: string) => flag.split('=')[0].replaceAll('_', '-')
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/)].map(nameOf))
  return RUNTIME_NODE_FLAGS.filter((f) => !given.has(nameOf(f)))
}

/**
 * Node's compile cache (NODE_COMPILE_CACHE), filled at install: a start then never loads
 * Node's TypeScript stripper. It must be set before the entry loads, so the npm scripts and
 * the Docker image set it, and the entry adds it when it adds the flags.
 */
export const COMPILE_CACHE_DIR = fileURLToPath(
  new URL('../../node_modules/.cache/prompt-appview/compile', import.meta.url),
)

/** The environment a restarted process gets: this one's, with the compile cache. */
export function runtimeEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env.NODE_COMPILE_CACHE || env.NODE_DISABLE_COMPILE_CACHE) return env
  return { ...env, NODE_COMPILE_CACHE: COMPILE_CACHE_DIR }
}

/**
 * Replaces this process (execve: same pid, same stdio) with one that has the shipped V8
 * flags, when any is missing; returns when none is. V8 reads them at start (heap sizes,
 * wasm tiers), so they cannot be set later, and the npm scripts are not the only way the
 * program is started.
 */
export function execWithRuntimeFlags(): void {
  const missing = missingRuntimeFlags(process.execArgv, process.env.NODE_OPTIONS ?? '')
  // Where the platform has no execve (Windows), the process runs on without them.
  if (missing.length === 0 || !process.execve) return
  process.execve(
    process.execPath,
    [process.execPath, ...missing, ...process.execArgv, ...process.argv.slice(1)],
    runtimeEnv(process.env),
  )
}

/**
 * How far `serve` lets the old generation grow past what the last full collection kept: V8's
 * own factor under a small cap made a reader collect all the time (bench/README.md, "Figures
 * behind the defaults").
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
