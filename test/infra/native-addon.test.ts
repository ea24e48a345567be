// The reference PDS stores its data through better-sqlite3. On Node 24, better-sqlite3 12.x
// subclasses node::ObjectWrap, whose destructor asserts that a Node environment is current;
// when V8 finalizes a statement while no context is entered (at teardown, or a GC at the
// wrong moment), the process aborts with "Assertion failed: (env) != nullptr" in
// RemoveEnvironmentCleanupHook. That killed a vitest worker in CI mid-file, past a test
// helper that tried to keep every statement reachable. package.json overrides better-sqlite3
// to 13.x (Node-API); this guards the override: the churn below aborted 20 of 20 runs on
// 12.11.1.
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'

const require = createRequire(import.meta.url)

const CHURN = `
const Database = require(process.argv[1])
for (let k = 0; k < 50; k++) {
  const db = new Database(':memory:')
  db.exec('create table t (a)')
  // Each prepare leaves a statement for the garbage collector, as kysely's do in the PDS.
  for (let i = 0; i < 2000; i++) db.prepare('insert into t values (' + i + ')').run()
  db.close()
}
`

describe('better-sqlite3 under the pinned Node', () => {
  it('lets a process that finalized thousands of statements exit cleanly', () => {
    const addon = require.resolve('better-sqlite3')
    const run = spawnSync(process.execPath, ['-e', CHURN, addon], { encoding: 'utf8' })
    expect(run.stderr).not.toMatch(/Assertion failed/)
    expect({ status: run.status, signal: run.signal }).toEqual({ status: 0, signal: null })
  })
})
