import pino from 'pino'
import type { Sink, SourceItem } from '../../src/indexer/sink.ts'
import { createMetrics, type Metrics } from '../../src/metrics.ts'

// Shared by the firehose and backfill tests: the three collections, record factories in
// the shapes Letta writes, a sink that collects, and polling.

export const PROMPT = 'xyz.quasigod.lab.letta.compiledPrompt'
export const CONVERSATION = 'xyz.quasigod.lab.letta.conversation'
export const AGENT = 'xyz.quasigod.lab.letta.agent'
export const COLLECTIONS = [PROMPT, CONVERSATION, AGENT]

export const silentLogger = () => pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })
export const testMetrics = (): Metrics =>
  createMetrics({ version: 'test', collections: COLLECTIONS })

export function agentRecord(system: string) {
  return { $type: AGENT, name: 'helper', system, createdAt: new Date().toISOString() }
}

export function conversationRecord(agentUri: string) {
  return {
    $type: CONVERSATION,
    agent: agentUri,
    title: 'a chat',
    createdAt: new Date().toISOString(),
  }
}

export function promptRecord(did: string, rkey: string, agentUri: string, content: string) {
  return {
    $type: PROMPT,
    agent: agentUri,
    conversation: `at://${did}/${CONVERSATION}/${rkey}`,
    content: `You are helpful.\n${content}`,
    coreMemory: content,
    rawSystemHash: `sha256:${'ab'.repeat(32)}`,
    memfsRevision: 'r1',
    compiledAt: new Date().toISOString(),
  }
}

export interface CollectingSink extends Sink {
  items: SourceItem[]
  /** Resolves once `pred` holds for the items collected (polls). */
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
    until: (pred, timeoutMs) => waitFor(() => pred(items), timeoutMs),
  }
}

export async function waitFor(pred: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!pred()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition')
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** The counter's current value for one label set. */
export async function counterValue(
  metrics: Metrics,
  labels: Record<string, string>,
  name: 'eventsTotal' | 'sourceReconnectsTotal' | 'resumeGapsTotal' = 'eventsTotal',
): Promise<number> {
  const got = await metrics[name].get()
  const match = got.values.find((v) =>
    Object.entries(labels).every(([k, val]) => (v.labels as Record<string, unknown>)[k] === val),
  )
  return match?.value ?? 0
}
