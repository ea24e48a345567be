import { describe, expect, it } from 'vitest'
import { COMMAND_NAMES, helpText } from '../../src/cli/help.ts'
import { SETTINGS } from '../../src/config/schema.ts'

// Each command's --help lists its own options and the settings it reads, and no others.

const flagsIn = (text: string) =>
  new Set(SETTINGS.filter((s) => new RegExp(`^  --${s.flag} `, 'm').test(text)).map((s) => s.flag))

describe('--help', () => {
  it('run reads every setting; every setting is read by some command', () => {
    expect(flagsIn(helpText('run')).size).toBe(SETTINGS.length)
    const read = new Set(COMMAND_NAMES.flatMap((c) => [...flagsIn(helpText(c))]))
    expect(read.size).toBe(SETTINGS.length)
  })

  it('demo lists none of the source and data-directory settings it replaces, and its port option', () => {
    const demo = helpText('demo')
    for (const flag of ['replay-file', 'relay-url', 'data-dir', 'source', 'jetstream-url'])
      expect(flagsIn(demo).has(flag), flag).toBe(false)
    expect(demo).toMatch(/^ {2}--jetstream-port P /m)
    expect(flagsIn(demo).has('port')).toBe(true)
  })

  it('serve, migrate and export list no source settings; backfill no HTTP ones', () => {
    for (const c of ['serve', 'migrate', 'export'])
      for (const flag of ['source', 'jetstream-url', 'replay-file', 'batch-size'])
        expect(flagsIn(helpText(c)).has(flag), `${c} --${flag}`).toBe(false)
    expect(flagsIn(helpText('migrate'))).toEqual(
      new Set(['database-url', 'data-dir', 'pglite-shared-buffers', 'log-level']),
    )
    for (const flag of ['port', 'admin-token', 'trust-proxy'])
      expect(flagsIn(helpText('backfill')).has(flag), flag).toBe(false)
    expect(flagsIn(helpText('backfill')).has('relay-url')).toBe(true)
  })
})
