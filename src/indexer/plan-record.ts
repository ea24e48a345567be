import type { CommitEvent } from '../model/events.ts'
import type { Nsids, Role } from '../model/nsids.ts'
import { agentTemplateHash, analyzePrompt, type PromptValidator } from '../model/prompt-record.ts'
import {
  type Anatomy,
  FIRST_REVISION,
  type PromptVersion,
  recompileAnatomy,
} from '../model/recompile-anatomy.ts'
import { textsOf } from '../model/record-parts.ts'
import {
  type AccountRow,
  keyOf,
  type PromptFacts,
  type Provenance,
  type StoredRecord,
} from '../model/rows.ts'
import type { Outcome } from '../observe/metrics.ts'
import type { BatchPlan, LoadedState } from './plan.ts'

// The state a batch is planned over, and the one record write every event kind ends in:
// the rev guard, the purge guard, recompile counting and prompt revisions are decided here.

/** What planning one batch reads (`loaded`, the rules) and writes (`plan`). */
export interface PlanContext {
  readonly plan: BatchPlan
  readonly loaded: LoadedState
  readonly nsids: Nsids
  readonly validator: PromptValidator
}

/** One record as an event leaves it; `cid: null` deletes it. */
export interface RecordWrite
  extends Pick<CommitEvent, 'did' | 'rkey' | 'rev' | 'cid' | 'record' | 'timeUs'> {
  role: Role
  provenance: Provenance | null
  /** A prompt's analysis done ahead (prepare.ts); absent: analyzed here. */
  analysis?: PromptFacts
}

export interface WriteResult {
  applied: boolean
  invalid: boolean
}

const REFUSED: WriteResult = { applied: false, invalid: false }

export function emptyPlan(): BatchPlan {
  return {
    rows: { prompt: new Map(), conversation: new Map(), agent: new Map() },
    previousAgentUris: new Map(),
    revisions: [],
    versions: new Map(),
    accounts: new Map(),
    visibility: new Map(),
    purged: new Set(),
    chains: new Map(),
    outcomes: [],
  }
}

export function currentRecord(ctx: PlanContext, role: Role, key: string): StoredRecord | undefined {
  return ctx.plan.rows[role].get(key) ?? ctx.loaded.records[role].get(key)
}

export function accountOf(ctx: PlanContext, did: string): AccountRow | undefined {
  return ctx.plan.accounts.get(did) ?? ctx.loaded.accounts.get(did)
}

/** The account row this batch writes for `did`, created (active, unknown) on first touch. */
export function touchAccount(ctx: PlanContext, did: string): AccountRow {
  const row: AccountRow = { ...(accountOf(ctx, did) ?? newAccount(did)) }
  ctx.plan.accounts.set(did, row)
  return row
}

const newAccount = (did: string): AccountRow => ({
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
})

export function countOutcome(
  ctx: PlanContext,
  collection: string,
  op: string,
  outcome: Outcome,
): void {
  ctx.plan.outcomes.push({ collection, op, outcome })
}

/** The outcome a record write is counted as. */
export function outcomeOf(r: WriteResult): Outcome {
  if (!r.applied) return 'ignored_rev'
  return r.invalid ? 'invalid' : 'indexed'
}

/** Applies one record write; `applied: false` when the rev or purge guard refuses it. */
export function writeRecord(ctx: PlanContext, w: RecordWrite): WriteResult {
  const acc = accountOf(ctx, w.did)
  if (acc && isPurgedBefore(acc, w.rev, w.timeUs)) return REFUSED
  const key = keyOf(w.did, w.rkey)
  const cur = currentRecord(ctx, w.role, key)
  if (cur && w.rev <= cur.rev) return REFUSED
  const { plan } = ctx
  // A prompt's agent before the batch: a prompt leaving a staleness group re-flags it.
  if (w.role === 'prompt' && !plan.previousAgentUris.has(key))
    plan.previousAgentUris.set(key, cur?.agentUri ?? null)
  const deleted = w.cid === null
  const { facts, anatomy } = analyzeWrite(ctx, key, cur, w)
  plan.rows[w.role].set(key, {
    did: w.did,
    rkey: w.rkey,
    rev: w.rev,
    cid: w.cid,
    deleted,
    recompiles: recompilesAfter(cur, w.cid),
    record: deleted ? null : w.record,
    agentUri: facts?.agentUri ?? null,
    facts,
    anatomy,
    templateHash: w.role === 'agent' && !deleted ? agentTemplateHash(w.record) : null,
    timeUs: w.timeUs,
    provenance: w.provenance,
  })
  if (facts && anatomy) addRevision(plan, w, cur, facts, anatomy)
  const accRow = touchAccount(ctx, w.did)
  if (!accRow.lastRev || w.rev > accRow.lastRev) accRow.lastRev = w.rev
  return { applied: true, invalid: facts?.validationError != null }
}

/** A live prompt write's facts and anatomy; none for other writes. */
function analyzeWrite(
  ctx: PlanContext,
  key: string,
  cur: StoredRecord | undefined,
  w: RecordWrite,
): { facts: PromptFacts | null; anatomy: Anatomy | null } {
  if (w.role !== 'prompt' || w.cid === null) return { facts: null, anatomy: null }
  const facts = w.analysis ?? analyzePrompt(ctx.validator, ctx.nsids, w.did, w.rkey, w.record)
  return { facts, anatomy: planAnatomy(ctx, key, cur, w, facts) }
}

/** A create after a delete is a new record; only an update to a new CID is a recompile. */
function recompilesAfter(cur: StoredRecord | undefined, cid: string | null): number {
  if (cid === null) return cur?.recompiles ?? 0
  if (cur === undefined || cur.deleted) return 0
  return cur.recompiles + (cur.cid !== cid ? 1 : 0)
}

/** A prompt's history gains a revision whenever its content (CID) is new. */
function addRevision(
  plan: BatchPlan,
  w: RecordWrite,
  cur: StoredRecord | undefined,
  facts: PromptFacts,
  anatomy: Anatomy,
): void {
  const wasLive = cur !== undefined && !cur.deleted
  if (!w.cid || (wasLive && cur.cid === w.cid)) return
  const { did, rkey, rev, cid } = w
  plan.revisions.push({ did, rkey, rev, cid, facts, anatomy, ...textsOf(w.record) })
}

/**
 * A live prompt write's anatomy (SPEC 14) against the version it replaces: the same CID
 * keeps its anatomy; a create, or a create after a delete (a new record, SPEC 4), is the
 * first revision. Remembers the version for the batch's next write of the same key.
 */
function planAnatomy(
  ctx: PlanContext,
  key: string,
  cur: StoredRecord | undefined,
  w: RecordWrite,
  facts: PromptFacts,
): Anatomy {
  const { plan, loaded } = ctx
  const prev = plan.versions.get(key) ?? loaded.versions.get(key)
  const live = cur !== undefined && !cur.deleted && prev !== undefined
  const version: PromptVersion = {
    ...textsOf(w.record),
    rawSystemHash: facts.rawSystemHash,
    memfsRevision: facts.memfsRevision,
  }
  let anatomy: Anatomy = FIRST_REVISION
  if (live && prev.cid === w.cid) anatomy = prev.anatomy ?? FIRST_REVISION
  else if (live) anatomy = recompileAnatomy(prev.version, version)
  plan.versions.set(key, { cid: w.cid, version, anatomy })
  return anatomy
}

/** Keys of `did`'s records of `role` that are live as of the plan so far. */
export function* liveKeysOf(ctx: PlanContext, did: string, role: Role): Generator<string> {
  const prefix = `${did}\u0000`
  const planned = ctx.plan.rows[role]
  const seen = new Set<string>()
  for (const map of [planned, ctx.loaded.records[role]] as Map<string, StoredRecord>[]) {
    for (const [key, rec] of map) {
      if (!key.startsWith(prefix) || seen.has(key)) continue
      seen.add(key)
      const latest = planned.get(key) ?? rec
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
