import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { startServing, writeReplayFile } from '../helpers/cli.ts'

// Anything unexpected at process level (an exception from a timer, a rejection nobody
// awaited) is logged as fatal with the error, what can be closed is closed (here: the PGlite
// data directory is released), and the process exits with status 1 for its supervisor.

const FIXTURE = fileURLToPath(new URL('../fixtures/inject-fault.ts', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'pav-last-resort-'))
const file = join(dir, 'events.ndjson')
writeReplayFile(file, 200)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('process-level last resort', () => {
  for (const [fault, message, kind] of [
    ['throw', 'injected exception', 'uncaughtException'],
    ['reject', 'injected rejection', 'unhandledRejection'],
  ] as const) {
    it(`${kind}: logged as fatal, closed, exit status 1`, async () => {
      const dataDir = join(dir, fault)
      const cli = await startServing(['run', '--source', 'replay', '--replay-file', file], {
        DATA_DIR: dataDir,
        FAULT: fault,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${FIXTURE}`.trim(),
      })
      expect(existsSync(join(dataDir, 'prompt-appview.lock'))).toBe(true)
      cli.child.kill('SIGUSR2')
      expect(await cli.exited).toBe(1)
      const fatal = cli
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l))
        .find((l) => l.level === 60)
      expect(fatal).toMatchObject({ kind, err: { message } })
      expect(fatal.msg).toMatch(/unexpected error/)
      // The shutdown ran: the data directory's lock went with the process.
      expect(existsSync(join(dataDir, 'prompt-appview.lock'))).toBe(false)
    }, 180_000)
  }
})
