import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { getCompileCacheDir } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { COMPILE_CACHE_DIR, RUNTIME_NODE_FLAGS } from '../src/cli/node-flags.ts'

// Fills Node's compile cache (src/cli/node-flags.ts, COMPILE_CACHE_DIR) at install, so the
// first start after a clone is as lean as every later one. Run as postinstall runs it:
// with NODE_COMPILE_CACHE set and the program's V8 flags (a code cache made under other
// flags is not used: Node keeps it under a directory named for them). Each module of src/
// and demo-network/ is loaded once; loading runs only a module's top level, so the entry,
// which starts work there, is left out (`--help` caches it).

const ROOT = new URL('..', import.meta.url).pathname
const ENTRIES = new Set(['src/cli/main.ts'])

const missing = RUNTIME_NODE_FLAGS.filter((f) => !process.execArgv.includes(f))
if (missing.length > 0 || dirname(getCompileCacheDir() ?? '') !== COMPILE_CACHE_DIR) {
  console.error(
    `warm-compile-cache: run with NODE_COMPILE_CACHE=${relative(ROOT, COMPILE_CACHE_DIR)} and ${RUNTIME_NODE_FLAGS.join(' ')} (as postinstall does)`,
  )
  process.exit(1)
}
const modules = ['src', 'demo-network']
  .flatMap((dir) =>
    readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' }).map((f) =>
      relative(ROOT, join(ROOT, dir, f)),
    ),
  )
  .filter((f) => f.endsWith('.ts') && !ENTRIES.has(f))
  .sort()
try {
  for (const f of modules) await import(pathToFileURL(join(ROOT, f)).href)
  execFileSync(process.execPath, [...process.execArgv, join(ROOT, 'src/cli/main.ts'), '--help'], {
    stdio: 'ignore',
  })
  console.log(`warm-compile-cache: ${modules.length + 1} modules in ${COMPILE_CACHE_DIR}`)
} catch (err) {
  // The cache only saves time and memory at start; an install goes on without it.
  console.warn('warm-compile-cache: not filled:', err)
}
process.exit(0)
