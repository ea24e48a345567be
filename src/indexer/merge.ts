import type { Outcome } from '../metrics.ts'
import type { Provenance } from '../model/events.ts'
import { type Nsids, ROLES, type Role, roleOf } from '../model/nsids.ts'
import { type AccountRow, isVisible, keyOf, type StoredRecord, splitKey } from '../model/rows.ts'
import { type BatchEvent, type BatchPlan, type LoadedState, snapshotChain } from './plan.ts'
import { agentTemplateHash, analyzePrompt, type PromptValidator } from './prompt-record.ts'

export * from './plan.ts'

// Folds a batch of events, in order, over the current state of every key it touches.
// Doing this in memory is what lets the writes be a few multi-row statements: each key
// ends up with exactly one final row, and the rev guard, tombstones, recompile counting
// and account ordering are decided here, once, with the state read under the writer lock.

export function planBatch(
  events: BatchEvent[],
  loaded: LoadedState,
  nsids: Nsids,
  validator: PromptValidator,
): BatchPlan {
  const plan: BatchPlan = {
    rows: { prompt: new Map(), conversation: new Map(), agent: new Map() },
    previousAgentUris: new Map(),
    revisions: [],
    accounts: new Map(),
    visibility: new Map(),
    purged: new Set(),
    chains: new Map(),
    outcomes: [],
  }
  const initialVisibility = new Map<string, boolean>()
  for (const [did, acc] of loaded.accounts) initialVisibility.set(did, isVisible(acc))

  const current = (role: Role, key: string): StoredRecord | undefined =>
    plan.rows[role].get(key) ?? loaded.records[role].get(key)

  const account = (did: string): AccountRow | undefined =>
    plan.accounts.get(did) ?? loaded.accounts.get(did)

  const touchAccount = (did: string): AccountRow => {
    const existing = account(did)
    const row: AccountRow = existing
      ? { ...existing }
      : {
          did,
          active: true,
          status: null,
          handle: null,
          operatorHidden: false,
          accountSeq: null,
          accountUs: null,
          identitySeq: null,
          identityUs: null,
          lastRev: null,
          purgedRev: null,
          purgedUs: null,
        }
    plan.accounts.set(did, row)
    return row
  }

  /** Applies one record write; returns false when the rev guard refuses it. */
  const write = (
    role: Role,
    did: string,
    rkey: string,
    rev: string,
    cid: string | null,
    record: unknown,
    timeUs: number,
    provenance: Provenance | null,
  ): { applied: boolean; invalid: boolean } => {
    const acc = account(did)
    if (acc && isPurgedBefore(acc, rev, timeUs)) return { applied: false, invalid: false }
    const key = keyOf(did, rkey)
    const cur = current(role, key)
    if (cur && rev <= cur.rev) return { applied: false, invalid: false }
    if (role === 'prompt' && !plan.previousAgentUris.has(key))
      plan.previousAgentUris.set(key, cur?.agentUri ?? null)
    const wasLive = cur !== undefined && !cur.deleted
    const deleted = cid === null
    const facts =
      role === 'prompt' && !deleted ? analyzePrompt(validator, nsids, did, rkey, record) : null
    // A create after a delete is a new record; only an update to a new CID is a recompile.
    let recompiles = 0
    if (deleted) recompiles = cur?.recompiles ?? 0
    else if (wasLive) recompiles = cur.recompiles + (cur.cid !== cid ? 1 : 0)
    plan.rows[role].set(key, {
      did,
      rkey,
      rev,
      cid,
      deleted,
      recompiles,
      record: deleted ? null : record,
      agentUri: facts?.agentUri ?? null,
      facts,
      templateHash: role === 'agent' && !deleted ? agentTemplateHash(record) : null,
      timeUs,
      provenance,
    })
    if (facts && cid && (!wasLive || cur.cid !== cid))
      plan.revisions.push({ did, rkey, rev, cid, facts, ...textsOf(record) })
    const accRow = touchAccount(did)
    if (!accRow.lastRev || rev > accRow.lastRev) accRow.lastRev = rev
    return { applied: true, invalid: facts?.validationError != null }
  }

  const count = (collection: string, op: string, outcome: Outcome) =>
    plan.outcomes.push({ collection, op, outcome })

  for (const ev of events) {
    switch (ev.kind) {
      case 'commit': {
        const role = roleOf(nsids, ev.collection)
        if (!role) continue // sources filter; a stray collection is never stored
        const deleted = ev.op === 'delete'
        const r = write(
          role,
          ev.did,
          ev.rkey,
          ev.rev,
          deleted ? null : ev.cid,
          ev.record,
          ev.timeUs,
          ev.provenance ?? null,
        )
        count(ev.collection, ev.op, r.applied ? (r.invalid ? 'invalid' : 'indexed') : 'ignored_rev')
        break
      }
      case 'snapshot': {
        const provenance = ev.provenance ?? null
        const present = new Set<string>()
        for (const rec of ev.records) {
          const role = roleOf(nsids, rec.collection)
          if (!role) continue
          present.add(`${role}\u0000${rec.rkey}`)
          const r = write(
            role,
            ev.did,
            rec.rkey,
            ev.rev,
            rec.cid,
            rec.record,
            ev.timeUs,
            provenance,
          )
          count(
            rec.collection,
            'create',
            r.applied ? (r.invalid ? 'invalid' : 'indexed') : 'ignored_rev',
          )
        }
        // What we hold for this repo but the repo no longer has was deleted meanwhile.
        for (const role of ROLES) {
          const nsid = nsids[role]
          for (const key of liveKeysOf(ev.did, role, loaded, plan)) {
            const rkey = splitKey(key)[1]
            if (present.has(`${role}\u0000${rkey}`)) continue
            const r = write(role, ev.did, rkey, ev.rev, null, null, ev.timeUs, provenance)
            if (r.applied) count(nsid, 'delete', 'indexed')
          }
        }
        if (ev.commit) plan.chains.set(ev.did, snapshotChain(ev, ev.commit))
        break
      }
      case 'chain':
        plan.chains.set(ev.did, ev)
        break
      case 'prune': {
        for (const role of ROLES) {
          const nsid = nsids[role]
          for (const key of liveKeysOf(ev.did, role, loaded, plan)) {
            const rec = current(role, key)
            if (!rec || rec.rev >= ev.rev) continue
            const r = write(role, ev.did, splitKey(key)[1], ev.rev, null, null, ev.timeUs, null)
            if (r.applied) count(nsid, 'delete', 'indexed')
          }
        }
        break
      }
      case 'account': {
        const acc = account(ev.did)
        // Account events arrive for every DID on the network; keep only the ones we index.
        if (!acc || isOlder(ev.seq, ev.timeUs, acc.accountSeq, acc.accountUs)) {
          count('unknown', 'account', 'ignored_rev')
          break
        }
        const row = touchAccount(ev.did)
        row.active = ev.active
        row.status = ev.status
        row.accountSeq = ev.seq ?? row.accountSeq
        row.accountUs = ev.timeUs
        if (ev.status === 'deleted') purge(ev.did, row, ev.timeUs)
        count('unknown', 'account', 'indexed')
        break
      }
      case 'identity': {
        const acc = account(ev.did)
        if (!acc || isOlder(ev.seq, ev.timeUs, acc.identitySeq, acc.identityUs)) {
          count('unknown', 'identity', 'ignored_rev')
          break
        }
        const row = touchAccount(ev.did)
        row.handle = ev.handle
        row.identitySeq = ev.seq ?? row.identitySeq
        row.identityUs = ev.timeUs
        count('unknown', 'identity', 'indexed')
        break
      }
      case 'operator-hide':
        touchAccount(ev.did).operatorHidden = ev.hidden
        break
    }
  }

  function purge(did: string, row: AccountRow, timeUs: number): void {
    plan.purged.add(did)
    row.purgedUs = Math.max(row.purgedUs ?? 0, timeUs)
    // Replays of commits made before the purge must not bring its records back.
    if (row.lastRev && (!row.purgedRev || row.lastRev > row.purgedRev)) row.purgedRev = row.lastRev
    for (const role of ROLES) {
      for (const [key, rec] of plan.rows[role]) {
        if (rec.did === did && !rec.deleted) {
          plan.rows[role].set(key, {
            ...rec,
            deleted: true,
            cid: null,
            record: null,
            facts: null,
            templateHash: null,
            agentUri: null,
          })
        }
      }
    }
  }

  for (const [did, acc] of plan.accounts) {
    const visible = isVisible(acc)
    if (visible !== (initialVisibility.get(did) ?? true)) plan.visibility.set(did, visible)
  }
  return plan
}

function* liveKeysOf(
  did: string,
  role: Role,
  loaded: LoadedState,
  plan: BatchPlan,
): Generator<string> {
  const prefix = `${did}\u0000`
  const seen = new Set<string>()
  for (const map of [plan.rows[role], loaded.records[role]] as Map<string, StoredRecord>[]) {
    for (const [key, rec] of map) {
      if (!key.startsWith(prefix) || seen.has(key)) continue
      seen.add(key)
      const latest = plan.rows[role].get(key) ?? rec
      if (!latest.deleted) yield key
    }
  }
}

/**
 * A deleted account's repo is gone: a commit at or below the newest rev seen before the
 * purge, or sent before the purge, is a replay and must not bring a record back.
 */
function isPurgedBefore(acc: AccountRow, rev: string, timeUs: number): boolean {
  return (
    (acc.purgedRev !== null && rev <= acc.purgedRev) ||
    (acc.purgedUs !== null && timeUs <= acc.purgedUs)
  )
}

/** Account/identity events: seqs compare when both have one, else source times. */
function isOlder(
  seq: number | null,
  us: number,
  lastSeq: number | null,
  lastUs: number | null,
): boolean {
  if (seq !== null && lastSeq !== null) return seq <= lastSeq
  return lastUs !== null && us < lastUs
}

function textsOf(record: unknown): { content: string | null; coreMemory: string | null } {
  const r = (record ?? {}) as Record<string, unknown>
  const str = (v: unknown) => (typeof v === 'string' ? v : null)
  return { content: str(r.content), coreMemory: str(r.coreMemory) }
}
