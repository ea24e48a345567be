import { readFileSync } from 'node:fs'
import {
  type JetstreamV2Server,
  startJetstreamV2Server,
  type V2ServerOptions,
} from '../../demo-network/jetstream-v2-server.ts'
import { createJetstreamV2Source, type JetstreamV2Options } from '../../src/ingest/jetstream/v2.ts'
import { COLLECTIONS, captureLogger, testMetrics } from './ingest-kit.ts'
import { onCleanup, sourceRun } from './source-run.ts'

// Shared by the Jetstream v2 tests: the committed dictionaries, a server on port 0 and a
// source wired to a collecting sink, all closed after each test.

export const DICTIONARY = readFileSync(
  new URL('../../demo-network/jetstream-v2.zdict', import.meta.url),
)
export const OTHER_DICTIONARY = readFileSync(
  new URL('../fixtures/jetstream-v2-other.zdict', import.meta.url),
)
export const WANTED = ['xyz.quasigod.lab.letta.*']

export async function v2Server(o: V2ServerOptions = {}): Promise<JetstreamV2Server> {
  const s = await startJetstreamV2Server(o)
  onCleanup(() => s.close())
  return s
}

export function v2Setup(url: string, o: Partial<JetstreamV2Options> = {}) {
  const metrics = testMetrics()
  const { logger, logs } = captureLogger()
  let dictionaryFetches = 0
  const source = createJetstreamV2Source({
    url,
    wantedCollections: WANTED,
    collections: COLLECTIONS,
    logger,
    metrics,
    backoffBaseMs: 10,
    backoffMaxMs: 50,
    // Long enough that a loaded machine never cuts a reconnect and adds one to the counts.
    connectTimeoutMs: 10_000,
    fetch: (input, init) => {
      dictionaryFetches++
      return fetch(input, init)
    },
    ...o,
  })
  const { sink, ac, start } = sourceRun(source)
  return { metrics, logs, source, sink, ac, start, fetches: () => dictionaryFetches }
}

/** `prompt_appview_source_faults_total{source="jetstream",reason}`. */
export async function faults(m: ReturnType<typeof testMetrics>, reason: string): Promise<number> {
  const { values } = await m.sourceFaultsTotal.get()
  return values.find((v) => v.labels.reason === reason)?.value ?? 0
}

export async function bytes(m: ReturnType<typeof testMetrics>, stage: string): Promise<number> {
  const { values } = await m.jetstreamBytesTotal.get()
  return values.find((v) => v.labels.stage === stage)?.value ?? 0
}
