import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  COMPILE_CACHE_DIR,
  missingRuntimeFlags,
  RUNTIME_NODE_FLAGS,
  runtimeEnv,
  serveHeapGrowingFlag,
} from '../../src/cli/node-flags.ts'
import { startServing } from '../helpers/cli.ts'

const read = (p: string) => readFileSync(new URL(`../../${p}`, import.meta.url), 'utf8')

describe('the heap flags the product ships with', () => {
  const flags = RUNTIME_NODE_FLAGS.join(' ')
  it('are the npm scripts that start it', () => {
    const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>
    for (const name of ['start', 'demo', 'prompt-appview']) {
      expect(scripts[name]).toContain(`node ${flags} src/cli/main.ts`)
      expect(scripts[name]).toMatch(
        /^NODE_COMPILE_CACHE=node_modules\/\.cache\/prompt-appview\/compile /,
      )
    }
    expect(COMPILE_CACHE_DIR).toBe(
      join(
        new URL('../..', import.meta.url).pathname,
        'node_modules/.cache/prompt-appview/compile',
      ),
    )
  })
  it('are left to the entry in the Docker image (NODE_OPTIONS refuses --liftoff-only)', () => {
    const dockerfile = read('Dockerfile')
    expect(dockerfile).not.toContain('NODE_OPTIONS')
    expect(dockerfile).toContain('CMD ["node", "src/cli/main.ts", "run"]')
    expect(dockerfile).toContain(
      'NODE_COMPILE_CACHE=/app/node_modules/.cache/prompt-appview/compile',
    )
  })
})

describe('the compile cache', () => {
  it('is filled at install with every module of src/ and demo-network/, under the program’s flags', () => {
    const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>
    expect(scripts.postinstall).toContain(
      `NODE_COMPILE_CACHE=node_modules/.cache/prompt-appview/compile node ${RUNTIME_NODE_FLAGS.join(' ')} scripts/warm-compile-cache.ts`,
    )
    const script = new URL('../../scripts/warm-compile-cache.ts', import.meta.url).pathname
    const out = execFileSync(process.execPath, [...RUNTIME_NODE_FLAGS, script], {
      env: { ...process.env, NODE_COMPILE_CACHE: COMPILE_CACHE_DIR },
      encoding: 'utf8',
    })
    // `npm run demo` loads demo-network/ too.
    const sources = ['../../src', '../../demo-network'].flatMap((dir) =>
      readdirSync(new URL(dir, import.meta.url), { recursive: true, encoding: 'utf8' }),
    )
    const count = sources.filter((f) => String(f).endsWith('.ts')).length
    expect(out).toContain(`warm-compile-cache: ${count} modules in ${COMPILE_CACHE_DIR}`)
    // Node keeps the cache under a directory named for its version and the V8 flags: the
    // one a process with the program's flags reads.
    const used = execFileSync(
      process.execPath,
      [...RUNTIME_NODE_FLAGS, '-p', 'require("node:module").getCompileCacheDir()'],
      { env: { ...process.env, NODE_COMPILE_CACHE: COMPILE_CACHE_DIR }, encoding: 'utf8' },
    ).trim()
    expect(readdirSync(used).length).toBeGreaterThanOrEqual(count)
  }, 60_000)

  it('refuses to fill it without the flags, which would make a cache the program never uses', () => {
    const script = new URL('../../scripts/warm-compile-cache.ts', import.meta.url).pathname
    expect(() =>
      execFileSync(process.execPath, [script], {
        env: { ...process.env, NODE_COMPILE_CACHE: COMPILE_CACHE_DIR },
        stdio: 'pipe',
      }),
    ).toThrow(/run with NODE_COMPILE_CACHE=node_modules\/\.cache\/prompt-appview\/compile/)
  })
})

describe('a process started without them', () => {
  it('gets the compile cache unless the operator set or disabled one', () => {
    expect(runtimeEnv({ A: '1' })).toEqual({ A: '1', NODE_COMPILE_CACHE: COMPILE_CACHE_DIR })
    expect(runtimeEnv({ NODE_COMPILE_CACHE: '/x' })).toEqual({ NODE_COMPILE_CACHE: '/x' })
    expect(runtimeEnv({ NODE_DISABLE_COMPILE_CACHE: '1' })).toEqual({
      NODE_DISABLE_COMPILE_CACHE: '1',
    })
  })

  it('gets the missing ones, and keeps an operator’s own, flag or NODE_OPTIONS', () => {
    expect(missingRuntimeFlags([], '')).toEqual(RUNTIME_NODE_FLAGS)
    expect(missingRuntimeFlags(RUNTIME_NODE_FLAGS, '')).toEqual([])
    expect(missingRuntimeFlags(['--max-old-space-size=1024'], '')).toEqual([
      '--max-semi-space-size=4',
      '--liftoff-only',
    ])
    expect(missingRuntimeFlags([], '--max_old_space_size=64 --max-semi-space-size=8')).toEqual([
      '--liftoff-only',
    ])
  })

  it('runs `node src/cli/main.ts serve` with them, in the same process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pav-flags-'))
    // startCli spawns the entry with no node flags at all, as the README's commands do.
    const serve = await startServing(['serve'], { DATA_DIR: dir, DATABASE_URL: '' })
    try {
      const argv = readFileSync(`/proc/${serve.child.pid}/cmdline`, 'utf8').split('\0')
      expect(argv.slice(1, 1 + RUNTIME_NODE_FLAGS.length)).toEqual(RUNTIME_NODE_FLAGS)
      expect(argv).toContain('serve')
      const env = readFileSync(`/proc/${serve.child.pid}/environ`, 'utf8').split('\0')
      expect(env).toContain(`NODE_COMPILE_CACHE=${COMPILE_CACHE_DIR}`)
    } finally {
      serve.child.kill('SIGTERM')
      await serve.exited
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})

describe('the heap growing factor of `serve`', () => {
  const MiB = 1024 * 1024
  it('is set under a small cap and left to V8 above 2 GiB', () => {
    expect(serveHeapGrowingFlag(256 * MiB + 12 * MiB)).toBe('--heap-growing-percent=100')
    expect(serveHeapGrowingFlag(2047 * MiB)).toBe('--heap-growing-percent=100')
    expect(serveHeapGrowingFlag(2048 * MiB)).toBeNull()
    expect(serveHeapGrowingFlag(4144 * MiB)).toBeNull()
  })

  // What the change relies on, pinned against the Node it runs on: under the shipped cap V8
  // allows 1.3x live before a full collection, and the flag set at run time (NODE_OPTIONS
  // refuses it) moves that to 2x. Full collections are forced by keeping ~40 MB live.
  const factors = (apply: boolean): string[] => {
    const module = new URL('../../src/cli/node-flags.ts', import.meta.url).href
    const code = `${apply ? `(await import(${JSON.stringify(module)})).applyServeHeapGrowing();` : ''}
      const keep = []; let batch = []
      for (let i = 0; i < 3e6; i++) {
        batch.push({ i, s: 'x' + i })
        if (batch.length === 2e5) { keep.push(batch); batch = []; if (keep.length > 2) keep.shift() }
      }`
    const out = execFileSync(
      process.execPath,
      [...RUNTIME_NODE_FLAGS, '--trace-gc-verbose', '--input-type=module', '-e', code],
      { encoding: 'utf8', maxBuffer: 64 * MiB },
    )
    return [...out.matchAll(/\[HeapController\] factor ([\d.]+)/g)].map((m) => m[1])
  }
  it('is 1.3 under the shipped cap and 2.0 once applied', () => {
    const shipped = factors(false)
    const applied = factors(true)
    expect(shipped.length).toBeGreaterThan(0)
    expect(new Set(shipped)).toEqual(new Set(['1.3']))
    expect(applied.length).toBeGreaterThan(0)
    expect(new Set(applied)).toEqual(new Set(['2.0']))
  }, 60_000)
})
