import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// postgres.js 3.4.9 kills the process when a deferred write runs after the socket closed
// (test/cli/db-outage.test.ts shows it end to end). The fix is patches/postgres+3.4.9.patch,
// applied by `postinstall` on every npm install; this says at once, by name, if an install
// skipped it (--ignore-scripts) or a version bump left the patch behind.

// The package exports no package.json, so it is read from where npm installs it.
const root = fileURLToPath(new URL('../../node_modules/postgres', import.meta.url))

describe('postgres.js driver patch', () => {
  it('is the version the patch is for, and the patch is applied to every build', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
    expect(pkg.version).toBe('3.4.9')
    for (const build of ['src', 'cjs/src', 'cf/src']) {
      const code = readFileSync(join(root, build, 'connection.js'), 'utf8')
      const nextWrite = code.slice(code.indexOf('function nextWrite'))
      expect(nextWrite, build).toMatch(/^function nextWrite\(fn\) \{[^}]*if \(!socket\) \{/)
    }
  })

  it('is applied by postinstall', () => {
    const own = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))
    expect(own.scripts.postinstall).toMatch(/^patch-package/)
  })
})
