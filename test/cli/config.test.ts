import { describe, expect, it } from 'vitest'
import { parseCommandLine } from '../../src/cli/args.ts'
import { ConfigError, loadConfig, retiredSettingsIn } from '../../src/config/config.ts'

describe('configuration', () => {
  it('defaults need nothing set', () => {
    const c = loadConfig({}, {})
    expect(c.databaseUrl).toBeNull()
    expect(c.dataDir).toBe('./data')
    expect(c.source).toBe('jetstream')
    expect(c.port).toBe(3000)
    expect(c.promptNsid).toBe('xyz.quasigod.lab.letta.compiledPrompt')
  })

  it('flags win over the environment, which wins over defaults', () => {
    const c = loadConfig({ port: '4000' }, { PORT: '5000', LOG_LEVEL: 'debug' })
    expect(c.port).toBe(4000)
    expect(c.logLevel).toBe('debug')
  })

  it('names every bad setting in one error', () => {
    let err: unknown
    try {
      loadConfig(
        { source: 'carrier-pigeon', bogus: '1' },
        {
          PORT: 'eighty',
          DATABASE_URL: 'mysql://x',
          PROMPT_NSID: 'not an nsid',
          TRUST_PROXY: 'true',
          PARTITION: '5/2',
        },
      )
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(ConfigError)
    const problems = (err as ConfigError).problems
    expect(problems).toHaveLength(6)
    for (const name of [
      '--source',
      '--bogus',
      'PORT',
      'DATABASE_URL',
      'PROMPT_NSID',
      'PARTITION',
    ]) {
      expect(problems.some((p) => p.startsWith(name))).toBe(true)
    }
  })

  it('takes PGLITE_SHARED_BUFFERS as a Postgres memory size, and a bad one with the others', () => {
    expect(loadConfig({}, {}).pgliteSharedBuffers).toBeNull()
    expect(loadConfig({}, { PGLITE_SHARED_BUFFERS: '256MB' }).pgliteSharedBuffers).toBe('256MB')
    expect(loadConfig({ 'pglite-shared-buffers': '128kB' }, {}).pgliteSharedBuffers).toBe('128kB')
    for (const bad of ['16', '16mb', '16 MB', '0MB', '64kB', '2GB', '-1MB', '1.5GB', 'lots']) {
      let err: unknown
      try {
        loadConfig({}, { PGLITE_SHARED_BUFFERS: bad, PORT: 'eighty' })
      } catch (e) {
        err = e
      }
      const problems = (err as ConfigError).problems
      expect(problems, bad).toHaveLength(2)
      expect(
        problems.find((p) => p.startsWith('PGLITE_SHARED_BUFFERS')),
        bad,
      ).toMatch(/must be (a size with its unit|from 128kB to 1024MB)/)
    }
  })

  it('names the removed thread settings an environment still sets, and refuses their flags', () => {
    expect(() => loadConfig({}, { ANALYSIS_THREADS: '2', VERIFY_THREADS: '4' })).not.toThrow()
    expect(retiredSettingsIn({ ANALYSIS_THREADS: 'auto', VERIFY_THREADS: '0', PORT: '1' })).toEqual(
      ['ANALYSIS_THREADS', 'VERIFY_THREADS'],
    )
    expect(retiredSettingsIn({ PORT: '1' })).toEqual([])
    expect(() => loadConfig({ 'analysis-threads': '1', 'verify-threads': '1' }, {})).toThrow(
      /--analysis-threads: unknown option[\s\S]*--verify-threads: unknown option/,
    )
  })

  it('replay needs a file', () => {
    expect(() => loadConfig({ source: 'replay' }, {})).toThrow(/REPLAY_FILE/)
  })
})

describe('argument parsing', () => {
  it('splits command, settings and repeatable command options', () => {
    const a = parseCommandLine([
      'backfill',
      '--did',
      'did:plc:a',
      '--did=did:plc:b',
      '--reset',
      '--relay-url',
      'http://127.0.0.1:1',
      '--port=1',
      '--port',
      '2',
    ])
    expect(a.command).toBe('backfill')
    expect(a.options).toEqual({ did: ['did:plc:a', 'did:plc:b'], reset: true })
    expect(a.settings).toEqual({ 'relay-url': 'http://127.0.0.1:1', port: '2' })
  })

  it('recognises help anywhere', () => {
    expect(parseCommandLine(['serve', '--help'])).toMatchObject({ command: 'serve', help: true })
    expect(parseCommandLine(['-h']).help).toBe(true)
  })

  it('refuses unknown options, missing values and options of another command', () => {
    expect(() => parseCommandLine(['run', '--no-such-thing'])).toThrow(/no-such-thing/)
    expect(() => parseCommandLine(['export', '--out'])).toThrow(/--out/)
    expect(() => parseCommandLine(['run', '--rate', '5'])).toThrow(
      /--rate: an option of `demo`, not of `run`/,
    )
    expect(() => parseCommandLine(['--did', 'did:plc:a'])).toThrow(/not of `run`/)
  })
})
