import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'

// The test files whose database TEST_DATABASE_URL decides: those that reach it, directly or
// through the helpers they import. The others run the same whatever it says, so the second
// run of the suite (on Postgres) leaves them out. A test file that reaches the database but
// checks nothing the driver decides says so on a line of its own, `// driver-independent:`
// followed by why; the Postgres run leaves it out too.

const USES_DRIVER = /TEST_DATABASE_URL|createTestDatabase|usingPostgres/
const OPTED_OUT = /^\/\/ driver-independent: \S/m

function testFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(dir, f))
}

export function driverDependentTests(root: string): string[] {
  const memo = new Map<string, boolean>()
  const reaches = (file: string): boolean => {
    const known = memo.get(file)
    if (known !== undefined) return known
    memo.set(file, false) // a cycle adds nothing
    const text = readFileSync(file, 'utf8')
    const result =
      USES_DRIVER.test(text) ||
      [...text.matchAll(/from '(\.[^']+\.ts)'/g)].some((m) => {
        const target = normalize(join(dirname(file), m[1]))
        const inTests = !relative(root, target).startsWith('src')
        return inTests && existsSync(target) && reaches(target)
      })
    memo.set(file, result)
    return result
  }
  return ['test', 'bench/test']
    .flatMap((dir) => testFiles(join(root, dir)))
    .filter((f) => !OPTED_OUT.test(readFileSync(f, 'utf8')) && reaches(f))
    .map((f) => relative(root, f))
}
