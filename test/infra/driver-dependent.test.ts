import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { driverDependentTests } from '../helpers/driver-dependent.ts'

// The Postgres run's choice of files: those that reach the database through a helper, less
// the ones that say on a line of their own that nothing they check is the driver's.
// driver-independent: it reads test files, never a database (its helper only names the variable).

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const tmp = mkdtempSync(join(tmpdir(), 'pa-driver-dep-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

describe('driverDependentTests', () => {
  it('follows helper imports and honours the opt-out line only at the start of a line', () => {
    mkdirSync(join(tmp, 'test', 'helpers'), { recursive: true })
    mkdirSync(join(tmp, 'bench', 'test'), { recursive: true })
    const file = (path: string, text: string) => writeFileSync(join(tmp, path), text)
    file('test/helpers/db.ts', 'export const createTestDatabase = 1\n')
    const imports = "import { createTestDatabase } from './helpers/db.ts'\n"
    file('test/reaches.test.ts', imports)
    file('test/opted.test.ts', `${imports}// driver-independent: only markup is checked.\n`)
    file('test/quoted.test.ts', `${imports}const s = '// driver-independent: not a marker'\n`)
    file('test/bare.test.ts', `// driver-independent:\n${imports}`)
    file('test/alone.test.ts', "import { x } from './helpers/other.ts'\n")
    expect(driverDependentTests(tmp).sort()).toEqual([
      'test/bare.test.ts',
      'test/quoted.test.ts',
      'test/reaches.test.ts',
    ])
  })

  it('keeps the subscription UI and the pages on Postgres, and leaves the browser walks out', () => {
    const chosen = driverDependentTests(ROOT)
    expect(chosen).toContain('test/ui/pages.test.ts')
    expect(chosen).toContain('test/ui/live.test.ts')
    for (const f of ['browse', 'hostile', 'revision-page'])
      expect(chosen).not.toContain(`test/ui/${f}.test.ts`)
  })
})
