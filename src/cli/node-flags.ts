import { fileURLToPath } from 'node:url'
import { getHeapStatistics, setFlagsFromString } from 'node:v8'

// The V8 flags the product runs with: a small heap, as the indexer's working set is bounded,
// and wasm on Liftoff, as the optimizing tier costs embedded PGlite memory (bench/README.md,
// "Figures behind the defaults" and "PGlite on Liftoff").
export const RUNTIME_NODE_FLAGS = [
  '--max-semi-space-size=4',
  '--max-old-space-size=256',
  '--liftoff-only',
]

/** The shipped flags not given; one the operator gave (flag or NODE_OPTIONS, any value) is theirs. */
export function missingRuntimeFlags(execArgv: readonly string[], nodeOptions: string): string[] {
  const nameOf = (flag: string) => flag.split('=')[0].replaceAll('_', '-')
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/)].map(nameOf))
  return RUNTIME_NODE_FLAGS.filter((f) => !given.has(nameOf(f)))
}

/**
 * Node's compile cache, filled at install so a start never loads Node's TypeScript stripper;
 * it must be set before the entry loads (the npm scripts, the Docker image, a re-exec).
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
 * Replaces this process (execve: same pid, same stdio) with one that has the shipped V8 flags
 * when any is missing: V8 reads them only at start, and the npm scripts are not the only way in.
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
 * The V8 flag `serve` sets for a heap limit, or null when V8's own factor is as high (at 2 GiB
 * and above, up to 4x): under a small cap V8's factor made a reader collect all the time
 * (bench/README.md, "Figures behind the defaults").
 */
export function serveHeapGrowingFlag(heapLimitBytes: number): string | null {
  return heapLimitBytes < 2048 * 1024 * 1024 ? '--heap-growing-percent=100' : null
}

/**
 * Set at run time because NODE_OPTIONS refuses the flag (Docker passes the heap caps there);
 * V8 reads it at every full collection, so setting it before the server starts is in time.
 */
export function applyServeHeapGrowing(): string | null {
  const flag = serveHeapGrowingFlag(getHeapStatistics().heap_size_limit)
  if (flag) setFlagsFromString(flag)
  return flag
}
