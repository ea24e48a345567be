import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { resolveWithinDrizzle } from '../../src/cli/module-loading.ts'

const DRIZZLE = new URL('./', import.meta.resolve('drizzle-orm')).href

describe('the short cut for drizzle-orm’s own imports', () => {
  it('takes only relative .js imports from one drizzle-orm file to another', () => {
    const parent = `${DRIZZLE}pg-core/table.js`
    expect(resolveWithinDrizzle('../entity.js', parent)).toEqual({
      url: `${DRIZZLE}entity.js`,
      format: 'module',
      shortCircuit: true,
    })
    expect(resolveWithinDrizzle('drizzle-orm/pg-core', parent)).toBeNull()
    expect(resolveWithinDrizzle('node:fs', parent)).toBeNull()
    expect(resolveWithinDrizzle('./table.cjs', parent)).toBeNull()
    expect(resolveWithinDrizzle('../../postgres/src/index.js', parent)).toBeNull()
    expect(resolveWithinDrizzle('./entity.js', import.meta.url)).toBeNull()
    expect(resolveWithinDrizzle('./entity.js', undefined)).toBeNull()
  })

  it('answers what Node’s own resolver answers, for every such import the program makes', () => {
    // A child loads the whole program with a hook that asks both and counts disagreements.
    const script = `
      import { registerHooks } from 'node:module'
      import { resolveWithinDrizzle } from './src/cli/module-loading.ts'
      let same = 0, differ = []
      registerHooks({ resolve(specifier, context, next) {
        const ours = resolveWithinDrizzle(specifier, context.parentURL)
        const node = next(specifier, context)
        if (ours) (ours.url === node.url && ours.format === node.format ? same++ : differ.push([specifier, node.url, node.format]))
        return node
      } })
      await import('./src/cli/commands.ts')
      console.log(JSON.stringify({ same, differ }))`
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: new URL('../../', import.meta.url),
      encoding: 'utf8',
    })
    const { same, differ } = JSON.parse(out.trim().split('\n').at(-1)!)
    expect(differ).toEqual([])
    expect(same).toBeGreaterThan(100)
  }, 60_000)
})
