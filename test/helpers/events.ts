import { createHash } from 'node:crypto'
import { TID } from '@atproto/common'
import type { Database } from '../../src/db/client.ts'
import { applyBatch, type IndexerDeps } from '../../src/indexer/apply.ts'
import type { BatchEvent } from '../../src/indexer/plan.ts'
import type { CommitEvent, IndexEvent } from '../../src/model/events.ts'
import { PromptValidator } from '../../src/model/prompt-record.ts'

type Op = 'create' | 'update' | 'delete'

export const NSIDS = {
  prompt: 'xyz.quasigod.lab.letta.compiledPrompt',
  conversation: 'xyz.quasigod.lab.letta.conversation',
  agent: 'xyz.quasigod.lab.letta.agent',
}

export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex')

export function indexerDeps(db: Database): IndexerDeps {
  return { db, nsids: NSIDS, validator: new PromptValidator(NSIDS.prompt) }
}

/**
 * Builds event sequences the way a repo produces them: a clock that only moves forward,
 * TIDs for rkeys and revs, fake-but-distinct CIDs.
 */
export class World {
  us = 1_764_460_800_000_000
  #cids = 0
  tick(deltaUs = 1000): number {
    this.us += deltaUs
    return this.us
  }
  tid(): string {
    return TID.fromTime(this.tick(), 0).toString()
  }
  cid(): string {
    return `bafyreitest${(++this.#cids).toString(36).padStart(8, '0')}`
  }
  iso(offsetUs = 0): string {
    return new Date((this.us + offsetUs) / 1000).toISOString()
  }
  agentUri(did: string, rkey: string): string {
    return `at://${did}/${NSIDS.agent}/${rkey}`
  }
  convUri(did: string, rkey: string): string {
    return `at://${did}/${NSIDS.conversation}/${rkey}`
  }
  promptRecord(
    did: string,
    rkey: string,
    o: Record<string, unknown> = {},
  ): Record<string, unknown> {
    const core = (o.coreMemory as string) ?? '<memory>persona: helpful</memory>'
    return {
      $type: NSIDS.prompt,
      agent: this.agentUri(did, 'agentrkey'),
      conversation: this.convUri(did, rkey),
      content: `You are an agent.\n${core}\nBe kind.`,
      coreMemory: core,
      rawSystemHash: sha256('template v1'),
      memfsRevision: 'rev-a',
      compiledAt: this.iso(),
      ...o,
    }
  }
  /** A commit (a create unless `op` says); a delete carries no cid and no record. */
  commit({
    did,
    collection,
    rkey,
    op = 'create',
    record,
    rev = this.tid(),
  }: {
    did: string
    collection: string
    rkey: string
    op?: Op
    record?: unknown
    /** Default: a fresh TID. */
    rev?: string
  }): CommitEvent {
    return {
      kind: 'commit',
      did,
      collection,
      rkey,
      rev,
      op,
      cid: op === 'delete' ? null : this.cid(),
      record: op === 'delete' ? null : record,
      timeUs: this.tick(),
    }
  }
  /** A commit of a compiled prompt: `promptRecord(did, rkey, fields)` unless a delete. */
  prompt(o: {
    did: string
    rkey: string
    op?: Op
    fields?: Record<string, unknown>
    rev?: string
  }) {
    const record = o.op === 'delete' ? undefined : this.promptRecord(o.did, o.rkey, o.fields)
    return this.commit({ ...o, collection: NSIDS.prompt, record })
  }
  /** A commit of a conversation, `{ $type }` its record unless `record` says otherwise. */
  conversation(o: { did: string; rkey: string; op?: Op; record?: unknown; rev?: string }) {
    const record = o.record ?? { $type: NSIDS.conversation }
    return this.commit({ ...o, collection: NSIDS.conversation, record })
  }
  /** A commit of an agent record whose template is `system`. */
  agent(o: { did: string; rkey: string; op?: Op; system?: string }) {
    return this.commit({
      ...o,
      collection: NSIDS.agent,
      record: { $type: NSIDS.agent, system: o.system },
    })
  }
  account(o: { did: string; active: boolean; status: string | null; seq: number }): IndexEvent {
    return { kind: 'account', ...o, timeUs: this.tick() }
  }
  identity(o: { did: string; handle: string; seq: number }): IndexEvent {
    return { kind: 'identity', ...o, timeUs: this.tick() }
  }
}

export async function apply(deps: IndexerDeps, events: BatchEvent[]) {
  return applyBatch(deps, events, null)
}
