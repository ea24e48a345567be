import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { type ServingCli, startServing, waitFor } from '../helpers/cli.ts'

// `npm start` (run with the sample replay) and `npm run demo` tell a newcomer where the
// browse UI is, and the address they print serves it.

const dir = mkdtempSync(join(tmpdir(), 'pav-ui-address-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const SAMPLE = fileURLToPath(new URL('../../examples/sample.ndjson', import.meta.url))

async function printedUi(cli: ServingCli, pattern: RegExp): Promise<string> {
  const m = await waitFor('the UI address in the log', async () => pattern.exec(cli.output()))
  return m[1]
}

async function expectUi(url: string): Promise<void> {
  const res = await fetch(url, { headers: { accept: 'text/html' } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
  expect(await res.text()).toContain('<h1>Overview</h1>')
}

describe('the UI address is printed', () => {
  it.each<{ name: string; args: string[]; env: Record<string, string>; printed: RegExp }>([
    {
      name: 'by `run` with the sample replay (npm start)',
      args: ['run', '--source', 'replay', '--replay-file', SAMPLE],
      env: { DATA_DIR: join(dir, 'start'), DATABASE_URL: '' },
      printed: /browse UI at (http:\/\/127\.0\.0\.1:\d+\/)/,
    },
    {
      name: 'by `demo` (npm run demo)',
      args: ['demo', '--rate', '50', '--dids', '5'],
      env: { DATABASE_URL: '' },
      printed: /demo running: open (http:\/\/127\.0\.0\.1:\d+\/) in a browser/,
    },
  ])(
    '$name',
    async ({ args, env, printed }) => {
      const cli = await startServing(args, env)
      try {
        const url = await printedUi(cli, printed)
        expect(url).toBe(`${cli.url}/`)
        await expectUi(url)
      } finally {
        cli.child.kill('SIGTERM')
        await cli.exited
      }
    },
    120_000,
  )
})
