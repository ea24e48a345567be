import type {
  AccountEvent,
  IdentityEvent,
  RepoPruneEvent,
  RepoSnapshotEvent,
} from '../model/events.ts'
import type { Nsids } from '../model/nsids.ts'
import { ROLES, type Role, roleOf } from '../model/nsids.ts'
import type { PromptValidator } from '../model/prompt-record.ts'
import { type AccountRow, isVisible, type Provenance, splitKey } from '../model/rows.ts'
import type {
  BatchEvent,
  BatchPlan,
  LoadedState,
  OperatorHideEvent,
  PreparedCommit,
} from './plan.ts'
import {
  accountOf,
  countOutcome,
  currentRecord,
  emptyPlan,
  liveKeysOf,
  outcomeOf,
  type PlanContext,
  touchAccount,
  writeRecord,
} from './plan-record.ts'

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
  const ctx: PlanContext = { plan: emptyPlan(), loaded, nsids, validator }
  for (const ev of events) (PLANNERS[ev.kind] as Planner<BatchEvent>)(ctx, ev)
  ctx.plan.visibility = visibilityChanges(ctx)
  return ctx.plan
}

type Planner<E> = (ctx: PlanContext, ev: E) => void

/** How each kind of event folds into the plan; a new kind fails to compile until it has one. */
const PLANNERS: { [K in BatchEvent['kind']]: Planner<Extract<BatchEvent, { kind: K }>> } = {
  commit: planCommit,
  snapshot: planSnapshot,
  chain: (ctx, ev) => void ctx.plan.chains.set(ev.did, ev),
  prune: planPrune,
  account: planAccount,
  identity: planIdentity,
  'operator-hide': planOperatorHide,
}

/** A create, update or delete of a prompt, conversation or agent record. */
function planCommit(ctx: PlanContext, ev: PreparedCommit): void {
  const role = roleOf(ctx.nsids, ev.collection)
  if (!role) return // sources filter; a stray collection is never stored
  const r = writeRecord(ctx, {
    role,
    did: ev.did,
    rkey: ev.rkey,
    rev: ev.rev,
    cid: ev.op === 'delete' ? null : ev.cid,
    record: ev.record,
    timeUs: ev.timeUs,
    provenance: ev.provenance ?? null,
    analysis: ev.analysis,
  })
  countOutcome(ctx, ev.collection, ev.op, outcomeOf(r))
}

/** A verified fetch of the whole repo: every record it has is written, the rest deleted. */
function planSnapshot(ctx: PlanContext, ev: RepoSnapshotEvent): void {
  const provenance = ev.provenance ?? null
  const present = new Set<string>()
  for (const rec of ev.records) {
    const role = roleOf(ctx.nsids, rec.collection)
    if (!role) continue
    present.add(`${role}\u0000${rec.rkey}`)
    const r = writeRecord(ctx, {
      role,
      did: ev.did,
      rkey: rec.rkey,
      rev: ev.rev,
      cid: rec.cid,
      record: rec.record,
      timeUs: ev.timeUs,
      provenance,
    })
    countOutcome(ctx, rec.collection, 'create', outcomeOf(r))
  }
  // Not a deletion: like a skipped commit, a record JSON cannot hold leaves what is stored.
  for (const rec of ev.skipped ?? []) {
    const role = roleOf(ctx.nsids, rec.collection)
    if (role) present.add(`${role}\u0000${rec.rkey}`)
    countOutcome(ctx, rec.collection, 'create', 'error')
  }
  // What we hold for this repo but the repo no longer has was deleted meanwhile.
  deleteLiveRecords(ctx, ev, provenance, (role, _key, rkey) => present.has(`${role}\u0000${rkey}`))
  // The fetch was verified: the repo's chain continues from the fetched commit.
  if (ev.commit)
    ctx.plan.chains.set(ev.did, {
      kind: 'chain',
      did: ev.did,
      rev: ev.rev,
      data: ev.commit.data,
      commit: ev.commit.cid,
      state: 'synchronized',
      reason: null,
      timeUs: ev.timeUs,
    })
}

/** The repo moved past `rev` without saying how: records older than it are gone. */
function planPrune(ctx: PlanContext, ev: RepoPruneEvent): void {
  deleteLiveRecords(ctx, ev, null, (role, key) => {
    const rec = currentRecord(ctx, role, key)
    return !rec || rec.rev >= ev.rev
  })
}

/** Deletes, at `ev.rev`, every live record of `ev.did` that `keep` does not spare. */
function deleteLiveRecords(
  ctx: PlanContext,
  ev: { did: string; rev: string; timeUs: number },
  provenance: Provenance | null,
  keep: (role: Role, key: string, rkey: string) => boolean,
): void {
  for (const role of ROLES) {
    for (const key of liveKeysOf(ctx, ev.did, role)) {
      const rkey = splitKey(key)[1]
      if (keep(role, key, rkey)) continue
      const r = writeRecord(ctx, {
        role,
        did: ev.did,
        rkey,
        rev: ev.rev,
        cid: null,
        record: null,
        timeUs: ev.timeUs,
        provenance,
      })
      if (r.applied) countOutcome(ctx, ctx.nsids[role], 'delete', 'indexed')
    }
  }
}

/** Account status; a `deleted` account is purged. Only DIDs we index are kept. */
function planAccount(ctx: PlanContext, ev: AccountEvent): void {
  const row = freshAccountRow(ctx, ev, (a) => [a.accountSeq, a.accountUs])
  if (!row) return
  row.active = ev.active
  row.status = ev.status
  row.accountSeq = ev.seq ?? row.accountSeq
  row.accountUs = ev.timeUs
  if (ev.status === 'deleted') purge(ctx, row, ev.timeUs)
  countOutcome(ctx, 'unknown', 'account', 'indexed')
}

function planIdentity(ctx: PlanContext, ev: IdentityEvent): void {
  const row = freshAccountRow(ctx, ev, (a) => [a.identitySeq, a.identityUs])
  if (!row) return
  row.handle = ev.handle
  row.identitySeq = ev.seq ?? row.identitySeq
  row.identityUs = ev.timeUs
  countOutcome(ctx, 'unknown', 'identity', 'indexed')
}

/**
 * The row an account or identity event may change; null (counted as ignored) when it is
 * older than what the row holds, or for a DID we do not index: these events arrive for
 * every DID on the network.
 */
function freshAccountRow(
  ctx: PlanContext,
  ev: AccountEvent | IdentityEvent,
  last: (acc: AccountRow) => [seq: number | null, us: number | null],
): AccountRow | null {
  const acc = accountOf(ctx, ev.did)
  if (!acc || isOlder(ev.seq, ev.timeUs, ...last(acc))) {
    countOutcome(ctx, 'unknown', ev.kind, 'ignored_rev')
    return null
  }
  return touchAccount(ctx, ev.did)
}

function planOperatorHide(ctx: PlanContext, ev: OperatorHideEvent): void {
  touchAccount(ctx, ev.did).operatorHidden = ev.hidden
}

function purge(ctx: PlanContext, row: AccountRow, timeUs: number): void {
  const { plan } = ctx
  plan.purged.add(row.did)
  row.purgedUs = Math.max(row.purgedUs ?? 0, timeUs)
  // Replays of commits made before the purge must not bring its records back.
  if (row.lastRev && (!row.purgedRev || row.lastRev > row.purgedRev)) row.purgedRev = row.lastRev
  for (const role of ROLES) {
    for (const [key, rec] of plan.rows[role]) {
      if (rec.did !== row.did || rec.deleted) continue
      plan.rows[role].set(key, {
        ...rec,
        deleted: true,
        cid: null,
        record: null,
        facts: null,
        anatomy: null,
        templateHash: null,
        agentUri: null,
      })
    }
  }
}

/** DIDs whose visibility the batch changed: all their rows change with it. */
function visibilityChanges(ctx: PlanContext): Map<string, boolean> {
  const changes = new Map<string, boolean>()
  for (const [did, acc] of ctx.plan.accounts) {
    const before = ctx.loaded.accounts.get(did)
    const visible = isVisible(acc)
    if (visible !== (before ? isVisible(before) : true)) changes.set(did, visible)
  }
  return changes
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
