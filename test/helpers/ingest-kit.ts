import { type Logger, pino } from 'pino'
import type { Sink, SourceItem } from '../../src/model/events.ts'
import { createMetrics, type Metrics } from '../../src/observe/metrics.ts'

// What every source test needs: the three collections, loggers, metrics and the counters
// read back, a sink that collects, and polling. Event builders live in jetstream-json.ts
// (wire JSON), events.ts (normalized events) and records.ts (Letta's record shapes).

export const PROMPT = 'xyz.quasigod.lab.letta.compiledPrompt'
export const CONVERSATION = 'xyz.quasigod.lab.letta.conversation'
export const AGENT = 'xyz.quasigod.lab.letta.agent'
export const COLLECTIONS = [PROMPT, CONVERSATION, AGENT]

export const silentLogger = () => pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })

export interface Captured {
  logger: Logger
  logs: Array<Record<string, unknown>>
}

/** A debug logger whose lines are kept, parsed, for the test to read. */
export function captureLogger(): Captured {
  const logs: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'debug' }, { write: (s: string) => void logs.push(JSON.parse(s)) })
  return { logger, logs }
}

export const testMetrics = (): Metrics =>
  createMetrics({ version: 'test', collections: COLLECTIONS })

/** Sum of the counter's samples whose labels include `labels` (one sample for a full set). */
export async function counterValue(
  metrics: Metrics,
  labels: Record<string, string>,
  name:
    | 'eventsTotal'
    | 'sourceReconnectsTotal'
    | 'resumeGapsTotal'
    | 'upstreamRequestsTotal' = 'eventsTotal',
): Promise<number> {
  const { values } = await metrics[name].get()
  return values
    .filter((v) =>
      Object.entries(labels).every(([k, x]) => (v.labels as Record<string, unknown>)[k] === x),
    )
    .reduce((a, v) => a + v.value, 0)
}

export interface CollectingSink extends Sink {
  items: SourceItem[]
  /** Resolves once `n` items have been pushed in total. */
  waitFor(n: number, timeoutMs?: number): Promise<void>
  /** Resolves once `pred` holds for the items collected. */
  until(pred: (items: SourceItem[]) => boolean, timeoutMs?: number): Promise<void>
}

/** Collects every item; `delayMs` makes it a slow store (backpressure). */
export function collectingSink(delayMs = 0): CollectingSink {
  const items: SourceItem[] = []
  return {
    items,
    async push(item) {
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs))
      items.push(item)
    },
    waitFor: (n, timeoutMs = 5000) =>
      until(() => items.length >= n, timeoutMs, `${n} items`).catch(() => {
        throw new Error(`saw ${items.length} of ${n} items`)
      }),
    until: (pred, timeoutMs = 10_000) => until(() => pred(items), timeoutMs),
  }
}

/** Polls `cond` every 10 ms until it holds, or fails after `timeoutMs`. */
export async function until(
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'a condition',
): Promise<void> {
  const end = performance.now() + timeoutMs
  while (!(await cond())) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}
