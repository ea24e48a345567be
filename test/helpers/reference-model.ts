// A reference model of SPEC sections 3 and 4: applies Jetstream events in order, in memory,
// and computes every prompt's flags from scratch on demand. It is the oracle the SQL
// indexer is cross-checked against, so it is written to be obviously right, not fast.
//
// Readings of the spec where it leaves room (the SQL indexer must agree):
// - a field needed for a flag that is missing or of the wrong type leaves that flag unset
//   (e.g. no inferred staleness for a prompt whose compiledAt is not a strict datetime),
//   except `mismatched`: anything but the exact at-uri of the slot is a mismatch;
// - at-uris are compared as exact strings; the agent is looked up by its exact at-uri;
// - an agent record counts as indexed while it is live, whatever its account's status;
// - a prompt's indexing time is when the event that brought its current CID was applied:
//   by default that event's time_us (see `indexTimeUs`);
// - a commit whose record is not an object (or has no cid) is unparseable and skipped.

import { createHash } from 'node:crypto'
import { isValidDid, isValidTid } from '@atproto/syntax'
import {
  createPromptValidator,
  instantNs,
  isPlainObject,
  normalizeHash,
} from './reference-validate.ts'

export const FLAG_NAMES = [
  'orphaned',
  'mismatched',
  'staleTemplate',
  'staleMemory',
  'coreMemoryDetached',
  'invalid',
] as const
export type FlagName = (typeof FLAG_NAMES)[number]

export interface ReferenceModelOptions {
  promptNsid: string
  conversationNsid: string
  agentNsid: string
  /**
   * Indexing time (µs) of the event being applied; default: its own time_us. Give the
   * indexer's clock to match an indexer that stamps wall-clock time (the five-minute rule).
   */
  indexTimeUs?: (eventTimeUs: number) => number
}

/** applied: state may have changed; ignored: well-formed but not for us or too old; skipped: unreadable */
export type ApplyOutcome = 'applied' | 'ignored' | 'skipped'

export interface ModelRecordRef {
  did: string
  rkey: string
  cid: string
}

export interface ModelPrompt extends ModelRecordRef {
  flags: FlagName[]
  recompiles: number
}

export interface ModelPromptDetail extends ModelPrompt {
  validationError: string | null
  /** which rule of SPEC section 3 set staleTemplate, if any */
  staleTemplateRule: 'agentHash' | 'inferred' | null
}

export interface ModelStats {
  prompts: number
  conversations: number
  agents: number
  flags: Record<FlagName | 'ok', number>
}

export interface ReferenceModel {
  apply(event: unknown): ApplyOutcome
  visibleState(): {
    prompts: ModelPrompt[]
    conversations: ModelRecordRef[]
    agents: ModelRecordRef[]
  }
  promptDetails(): ModelPromptDetail[]
  stats(): ModelStats
  handle(did: string): string | null
}

interface Stored {
  did: string
  collection: string
  rkey: string
  rev: string
  /** false: a tombstone (deleted, or purged with its account) */
  live: boolean
  cid: string | null
  record: Record<string, unknown> | null
  indexedAtUs: number
  recompiles: number
  /** prompts only: null when valid */
  validationError: string | null
}

interface Account {
  active: boolean
  seq: number | null
  timeUs: number
}

const FIVE_MINUTES_NS = 5n * 60n * 1_000_000_000n

export function createReferenceModel(opts: ReferenceModelOptions): ReferenceModel {
  const { promptNsid, conversationNsid, agentNsid } = opts
  const indexTime = opts.indexTimeUs ?? ((t: number) => t)
  const validate = createPromptValidator(promptNsid)
  const records = new Map<string, Stored>()
  const accounts = new Map<string, Account>()
  const handles = new Map<string, string>()
  const key = (did: string, collection: string, rkey: string) => `${did} ${collection} ${rkey}`
  const visible = (did: string) => accounts.get(did)?.active ?? true
  const live = (collection: string) =>
    [...records.values()].filter((r) => r.live && r.collection === collection)

  function applyCommit(did: string, timeUs: number, c: unknown): ApplyOutcome {
    if (!isPlainObject(c)) return 'skipped'
    const { rev, operation, collection, rkey, record, cid } = c
    if (typeof rev !== 'string' || !isValidTid(rev)) return 'skipped'
    if (typeof collection !== 'string' || typeof rkey !== 'string' || rkey === '') return 'skipped'
    if (operation !== 'create' && operation !== 'update' && operation !== 'delete') return 'skipped'
    if (operation !== 'delete' && (!isPlainObject(record) || typeof cid !== 'string'))
      return 'skipped'
    if (![promptNsid, conversationNsid, agentNsid].includes(collection)) return 'ignored'
    const k = key(did, collection, rkey)
    const old = records.get(k)
    // Older than what is stored (record or tombstone): a replay. Equal rev: same commit.
    if (old && rev < old.rev) return 'ignored'
    // A delete leaves a tombstone carrying its rev; a create after it starts afresh.
    const upsert = operation !== 'delete'
    const wasLive = old?.live === true
    const sameCid = upsert && wasLive && old.cid === cid
    records.set(k, {
      did,
      collection,
      rkey,
      rev,
      live: upsert,
      cid: upsert ? (cid as string) : null,
      record: upsert ? (record as Record<string, unknown>) : null,
      indexedAtUs: sameCid ? old.indexedAtUs : indexTime(timeUs),
      recompiles: upsert && wasLive ? old.recompiles + (sameCid ? 0 : 1) : 0,
      validationError: upsert && collection === promptNsid ? validate(rkey, record) : null,
    })
    return 'applied'
  }

  function applyAccount(did: string, timeUs: number, a: unknown): ApplyOutcome {
    if (!isPlainObject(a) || typeof a.active !== 'boolean') return 'skipped'
    const seq = typeof a.seq === 'number' ? a.seq : null
    const prev = accounts.get(did)
    if (prev) {
      const older = seq !== null && prev.seq !== null ? seq < prev.seq : timeUs < prev.timeUs
      if (older) return 'ignored'
    }
    accounts.set(did, { active: a.active, seq, timeUs })
    if (a.status === 'deleted') {
      // Purge: records go, their revs stay as tombstones.
      for (const r of records.values()) {
        if (r.did === did && r.live) Object.assign(r, { live: false, cid: null, record: null })
      }
    }
    return 'applied'
  }

  /** `sameRepo`: the live prompts of p's repo (p included). */
  function flagsOf(
    p: Stored,
    sameRepo: Stored[],
  ): Omit<ModelPromptDetail, keyof ModelRecordRef | 'recompiles'> {
    const rec = p.record!
    const flags = new Set<FlagName>()
    if (p.validationError !== null) flags.add('invalid')
    if (!records.get(key(p.did, conversationNsid, p.rkey))?.live) flags.add('orphaned')
    if (rec.conversation !== `at://${p.did}/${conversationNsid}/${p.rkey}`) flags.add('mismatched')
    if (typeof rec.content === 'string' && typeof rec.coreMemory === 'string') {
      if (!rec.content.includes(rec.coreMemory)) flags.add('coreMemoryDetached')
    }
    let staleTemplateRule: ModelPromptDetail['staleTemplateRule'] = null
    const agentUri = typeof rec.agent === 'string' ? rec.agent : null
    if (agentUri !== null) {
      const own = instantNs(rec.compiledAt)
      // Evidence: valid live prompts of the same repo naming the same agent, compiled
      // strictly later, and not more than five minutes ahead of their own indexing.
      const later = sameRepo.filter((q) => {
        if (q === p || q.validationError !== null) return false
        if (q.record!.agent !== agentUri) return false
        const at = instantNs(q.record!.compiledAt)
        if (at === null || own === null || at <= own) return false
        return at <= BigInt(q.indexedAtUs) * 1000n + FIVE_MINUTES_NS
      })
      const ownHash = normalizeHash(rec.rawSystemHash)
      const agent = agentRecord(agentUri)
      if (agent && typeof agent.system === 'string') {
        const templateHash = createHash('sha256').update(agent.system, 'utf8').digest('hex')
        if (ownHash !== null && ownHash !== templateHash) staleTemplateRule = 'agentHash'
      } else if (ownHash !== null) {
        if (later.some((q) => normalizeHash(q.record!.rawSystemHash) !== ownHash)) {
          staleTemplateRule = 'inferred'
        }
      }
      if (staleTemplateRule) flags.add('staleTemplate')
      const rev = rec.memfsRevision
      if (typeof rev === 'string') {
        const newer = (q: Stored) => typeof q.record!.memfsRevision === 'string'
        if (later.some((q) => newer(q) && q.record!.memfsRevision !== rev)) flags.add('staleMemory')
      }
    }
    return {
      flags: FLAG_NAMES.filter((f) => flags.has(f)).sort(),
      validationError: p.validationError,
      staleTemplateRule,
    }
  }

  function agentRecord(uri: string): Record<string, unknown> | null {
    const m = /^at:\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(uri)
    if (!m || m[2] !== agentNsid) return null
    const r = records.get(key(m[1], agentNsid, m[3]))
    return r?.live ? r.record : null
  }

  const byKey = (a: ModelRecordRef, b: ModelRecordRef) =>
    a.did < b.did ? -1 : a.did > b.did ? 1 : a.rkey < b.rkey ? -1 : a.rkey > b.rkey ? 1 : 0
  const refs = (collection: string): ModelRecordRef[] =>
    live(collection)
      .filter((r) => visible(r.did))
      .map((r) => ({ did: r.did, rkey: r.rkey, cid: r.cid! }))
      .sort(byKey)

  function promptDetails(): ModelPromptDetail[] {
    const repos = new Map<string, Stored[]>()
    for (const p of live(promptNsid)) {
      const list = repos.get(p.did)
      if (list) list.push(p)
      else repos.set(p.did, [p])
    }
    return [...repos.values()]
      .flat()
      .filter((p) => visible(p.did))
      .map((p) => ({
        did: p.did,
        rkey: p.rkey,
        cid: p.cid!,
        recompiles: p.recompiles,
        ...flagsOf(p, repos.get(p.did)!),
      }))
      .sort(byKey)
  }

  return {
    apply(ev) {
      if (!isPlainObject(ev) || typeof ev.did !== 'string' || !isValidDid(ev.did)) return 'skipped'
      if (typeof ev.time_us !== 'number' || !Number.isSafeInteger(ev.time_us)) return 'skipped'
      if (ev.kind === 'commit') return applyCommit(ev.did, ev.time_us, ev.commit)
      if (ev.kind === 'account') return applyAccount(ev.did, ev.time_us, ev.account)
      if (ev.kind === 'identity') {
        if (!isPlainObject(ev.identity)) return 'skipped'
        const h = ev.identity.handle
        if (typeof h === 'string') handles.set(ev.did, h)
        else handles.delete(ev.did)
        return 'applied'
      }
      return 'skipped'
    },
    visibleState: () => ({
      prompts: promptDetails().map(({ did, rkey, cid, flags, recompiles }) => ({
        did,
        rkey,
        cid,
        flags,
        recompiles,
      })),
      conversations: refs(conversationNsid),
      agents: refs(agentNsid),
    }),
    promptDetails,
    stats() {
      const prompts = promptDetails()
      const flags = Object.fromEntries(
        [...FLAG_NAMES, 'ok'].map((f) => [f, 0]),
      ) as ModelStats['flags']
      for (const p of prompts) {
        for (const f of p.flags) flags[f]++
        if (p.flags.length === 0) flags.ok++
      }
      return {
        prompts: prompts.length,
        conversations: refs(conversationNsid).length,
        agents: refs(agentNsid).length,
        flags,
      }
    },
    handle: (did) => handles.get(did) ?? null,
  }
}
