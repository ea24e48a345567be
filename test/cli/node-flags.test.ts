import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { RUNTIME_NODE_FLAGS } from '../../src/cli/node-flags.ts'

const read = (p: string) => readFileSync(new URL(`../../${p}`, import.meta.url), 'utf8')

describe('the heap flags the product ships with', () => {
  const flags = RUNTIME_NODE_FLAGS.join(' ')
  it('are the npm scripts that start it', () => {
    const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>
    for (const name of ['start', 'demo', 'prompt-appview']) {
      expect(scripts[name]).toContain(`node ${flags} src/cli/main.ts`)
    }
  })
  it('are the Docker image NODE_OPTIONS', () => {
    expect(read('Dockerfile')).toContain(`NODE_OPTIONS="${flags}"`)
  })
})
