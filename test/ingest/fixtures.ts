import { type Logger, pino } from 'pino'
import type { JetstreamJson } from '../../src/demo/jetstream-server.ts'
import type { Sink, SourceItem } from '../../src/indexer/sink.ts'
import { createMetrics, type Metrics } from '../../src/metrics.ts'

export const PROMPT = 'xyz.quasigod.lab.letta.compiledPrompt'
export const CONVERSATION = 'xyz.quasigod.lab.letta.conversation'
export const AGENT = 'xyz.quasigod.lab.letta.agent'
export const COLLECTIONS = [PROMPT, CONVERSATION, AGENT]
export const DID = 'did:plc:ewvi7nxzyoun6zhxrhs64oiz'
export const CID = 'bafyreibnoelefnzgwbcacyt4vh52ymxvzbjq7mmqhtcnwarfq4lzegsiqe'
export const T0 = 1_764_460_800_000_000

// TIDs are 13 base32-sortable chars; the last two vary with `n` so each commit is distinct.
const S32 = '234567abcdefghijklmnopqrstuvwxyz'
export const tid = (n: number) => `3m6sm7ncql5${S32[(n >> 5) % 32]}${S32[n % 32]}`

export function commit(n: number, o: Partial<Record<string, unknown>> = {}): JetstreamJson {
  const { collection = PROMPT, operation = 'create', ...rest } = o
  const isDelete = operation === 'delete'
  return {
    did: DID,
    time_us: T0 + n * 1000,
    kind: 'commit',
    commit: {
      rev: tid(n),
      operation,
      collection,
      rkey: tid(n),
      ...(isDelete ? {} : { record: { $type: collection, n }, cid: CID }),
      ...rest,
    },
  }
}

export function account(n: number, active = false, status: string | null = 'takendown') {
  return {
    did: DID,
    time_us: T0 + n * 1000,
    kind: 'account',
    account: { active, did: DID, seq: 100 + n, status, time: '2025-11-30T00:00:00.020Z' },
  }
}

export function identity(n: number, handle = 'ada.example.com') {
  return {
    did: DID,
    time_us: T0 + n * 1000,
    kind: 'identity',
    identity: { did: DID, handle, seq: 100 + n, time: '2025-11-30T00:00:00.021Z' },
  }
}

export interface CollectingSink extends Sink {
  items: SourceItem[]
  /** Resolves once `n` items have been pushed in total. */
  waitFor(n: number, timeoutMs?: number): Promise<void>
}

export function collectingSink(delayMs = 0): CollectingSink {
  const items: SourceItem[] = []
  const waiters: Array<{ n: number; resolve: () => void }> = []
  return {
    items,
    async push(item) {
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs))
      items.push(item)
      for (const w of waiters.filter((w) => items.length >= w.n)) w.resolve()
    },
    waitFor(n, timeoutMs = 5000) {
      if (items.length >= n) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const t = setTimeout(
          () => reject(new Error(`saw ${items.length} of ${n} items`)),
          timeoutMs,
        )
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(t)
            resolve()
          },
        })
      })
    },
  }
}

export interface Captured {
  logger: Logger
  logs: Array<Record<string, unknown>>
}

export function captureLogger(): Captured {
  const logs: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'debug' }, { write: (s: string) => void logs.push(JSON.parse(s)) })
  return { logger, logs }
}

export function testMetrics(): Metrics {
  return createMetrics({ version: 'test', collections: COLLECTIONS })
}

/** Sum of `prompt_appview_events_total` samples matching `labels`. */
export async function eventsCount(m: Metrics, labels: Record<string, string>): Promise<number> {
  const { values } = await m.eventsTotal.get()
  return values
    .filter((v) =>
      Object.entries(labels).every(([k, x]) => (v.labels as Record<string, unknown>)[k] === x),
    )
    .reduce((a, v) => a + v.value, 0)
}

export async function counterValue(
  c: Metrics['sourceReconnectsTotal'],
  source: string,
): Promise<number> {
  const { values } = await c.get()
  return values.find((v) => v.labels.source === source)?.value ?? 0
}

/** Polls `cond` until it holds, or fails after `timeoutMs`. */
export async function until(
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<void> {
  const end = performance.now() + timeoutMs
  while (!(await cond())) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}
