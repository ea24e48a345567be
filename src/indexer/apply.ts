import type { AppContext } from '../context/context.ts'
import { emitChanges } from '../db/change-log.ts'
import type { Executor } from '../db/client.ts'
import { recomputeFlags } from '../db/recompute-flags.ts'
import { JsonText } from '../db/recordset.ts'
import { saveChains } from '../db/repo-chain.ts'
import { insertRevisionTexts, loadPreviousTexts } from '../db/revision-texts.ts'
import { beginWriterTransaction } from '../db/writer-lock.ts'
import {
  insertRevisions,
  loadAccounts,
  loadRecords,
  purgeRepos,
  saveCursor,
  setHidden,
  upsertAccounts,
  upsertRecords,
} from '../db/writes.ts'
import type { CursorPosition } from '../model/events.ts'
import { type Nsids, ROLES, type Role, roleOf } from '../model/nsids.ts'
import { isVisible, keyOf, splitKey } from '../model/rows.ts'
import { planBatch } from './merge.ts'
import type { BatchEvent, BatchPlan, LoadedState, OutcomeCount } from './plan.ts'
import { planRevisionTexts } from './revision-texts.ts'

/** What applying a batch needs: a strict part of the process's one dependency bag. */
export type IndexerDeps = Pick<AppContext, 'db' | 'nsids' | 'validator'>

export interface BatchResult {
  outcomes: OutcomeCount[]
  changes: number
  /** Repos seen for the first time: their handles are worth looking up. */
  newDids: string[]
}

/** Accounts, purges and record rows: what the texts' base content no longer needs. */
async function writeRecords(
  tx: Executor,
  plan: BatchPlan,
  hiddenOf: (did: string) => boolean,
  now: Date,
): Promise<void> {
  await upsertAccounts(tx, [...plan.accounts.values()], now)
  await purgeRepos(tx, [...plan.purged])
  for (const role of ROLES)
    await upsertRecords(tx, role, [...plan.rows[role].values()], hiddenOf, now)
}

type Keys = Array<{ did: string; rkey: string }>

/** The keys a batch's events touch, per role, and the repos it touches whole. */
function touchedKeys(events: BatchEvent[], nsids: Nsids) {
  const keys: Record<Role, Map<string, { did: string; rkey: string }>> = {
    prompt: new Map(),
    conversation: new Map(),
    agent: new Map(),
  }
  const wholeRepos = new Set<string>()
  const dids = new Set<string>()
  for (const ev of events) {
    dids.add(ev.did)
    if (ev.kind === 'commit') {
      const role = roleOf(nsids, ev.collection)
      if (role) keys[role].set(keyOf(ev.did, ev.rkey), { did: ev.did, rkey: ev.rkey })
    } else if (ev.kind === 'snapshot' || ev.kind === 'prune') {
      wholeRepos.add(ev.did)
    }
  }
  return { keys, repos: [...wholeRepos], dids: [...dids] }
}

/** 1. The current state of everything the batch touches. */
async function loadState(
  db: IndexerDeps['db'],
  tx: Executor,
  events: BatchEvent[],
  nsids: Nsids,
): Promise<LoadedState> {
  const { keys, repos, dids } = touchedKeys(events, nsids)
  const [prompt, conversation, agent, accounts] = await Promise.all([
    loadRecords(db, tx, 'prompt', [...keys.prompt.values()], repos),
    loadRecords(db, tx, 'conversation', [...keys.conversation.values()], repos),
    loadRecords(db, tx, 'agent', [...keys.agent.values()], repos),
    loadAccounts(tx, dids),
  ])
  return { records: { prompt, conversation, agent }, accounts }
}

/** 3. Accounts, purges, records, history, visibility and chains. */
async function writePlan(
  db: IndexerDeps['db'],
  tx: Executor,
  plan: BatchPlan,
  loaded: LoadedState,
  now: Date,
): Promise<void> {
  const finalAccounts = new Map([...loaded.accounts, ...plan.accounts])
  const hiddenOf = (did: string) => {
    const acc = finalAccounts.get(did)
    return acc ? !isVisible(acc) : false
  }
  // Revision texts delta against the current content, so it is read before it is replaced;
  // a repo purged in this batch loses its texts, so nothing may rest on them.
  const textKeys = new Map(
    plan.revisions
      .filter((r) => !plan.purged.has(r.did))
      .map((r) => [keyOf(r.did, r.rkey), { did: r.did, rkey: r.rkey }]),
  )
  const previous = await loadPreviousTexts(db, tx, [...textKeys.values()])
  // The record writes go to the database while the line diffs are computed here: the diffs
  // hand the event loop back often enough for each statement to follow the last.
  const records = writeRecords(tx, plan, hiddenOf, now)
  records.catch(() => {}) // awaited below, after the diffs; this only keeps it handled
  const texts = await planRevisionTexts(
    plan.revisions.map((r) => ({ ...r, contentHash: r.facts.contentHash })),
    previous,
  )
  await records
  await insertRevisions(
    tx,
    plan.revisions.map((r, i) => ({
      did: r.did,
      rkey: r.rkey,
      rev: r.rev,
      cid: r.cid,
      compiledAt: r.facts.compiledAt,
      rawSystemHash: r.facts.rawSystemHash,
      memfsRevision: r.facts.memfsRevision,
      contentHash: r.facts.contentHash,
      recordRest: new JsonText(r.facts.recordParts.rest),
      ...texts.refs[i],
    })),
    now,
  )
  await insertRevisionTexts(tx, texts.texts)
  await setHidden(tx, plan.visibility)
  await saveChains(tx, [...plan.chains.values()], now)
}

const written = (plan: BatchPlan, role: Role): Keys =>
  [...plan.rows[role].keys()].map((k) => {
    const [did, rkey] = splitKey(k)
    return { did, rkey }
  })

/** 4. Flags that depend on other records: returns the prompts whose flags changed. */
function reflag(db: IndexerDeps['db'], tx: Executor, plan: BatchPlan): Promise<Keys> {
  const groups = new Map<string, { did: string; agent_uri: string }>()
  for (const [key, row] of plan.rows.prompt) {
    for (const uri of [row.agentUri, plan.previousAgentUris.get(key) ?? null]) {
      if (uri) groups.set(`${row.did}\u0000${uri}`, { did: row.did, agent_uri: uri })
    }
  }
  return recomputeFlags(db, tx, {
    slots: [...written(plan, 'prompt'), ...written(plan, 'conversation')],
    groups: [...groups.values()],
    agents: written(plan, 'agent'),
    agentRepos: [...plan.purged],
  })
}

/** 5. The change log of what the batch wrote or re-flagged; returns the rows emitted. */
async function logChanges(
  deps: IndexerDeps,
  tx: Executor,
  plan: BatchPlan,
  flagged: Keys,
): Promise<number> {
  const reposChanged = [...new Set([...plan.visibility.keys(), ...plan.purged])]
  let changes = 0
  for (const role of ROLES) {
    const touched = new Map(written(plan, role).map((k) => [keyOf(k.did, k.rkey), k]))
    if (role === 'prompt') for (const k of flagged) touched.set(keyOf(k.did, k.rkey), k)
    changes += await emitChanges(
      deps.db,
      tx,
      role,
      deps.nsids[role],
      [...touched.values()],
      reposChanged,
    )
  }
  return changes
}

/**
 * Applies a batch of events in ONE transaction with set-based statements, together with
 * the cursor it brings the source to. Either all of it lands or none of it.
 */
export async function applyBatch(
  deps: IndexerDeps,
  events: BatchEvent[],
  cursor: CursorPosition | null,
): Promise<BatchResult> {
  const { db, nsids } = deps
  return db.transaction(async (tx) => {
    await beginWriterTransaction(tx)
    const now = new Date()
    const loaded = await loadState(db, tx, events, nsids)
    // 2. Fold the events over it.
    const plan = planBatch(events, loaded, nsids, deps.validator)
    await writePlan(db, tx, plan, loaded, now)
    const flagged = await reflag(db, tx, plan)
    // The change log, then the cursor: both commit with the writes they describe.
    const changes = await logChanges(deps, tx, plan, flagged)
    if (cursor) await saveCursor(tx, cursor, now)
    const newDids = [...plan.accounts.keys()].filter((did) => !loaded.accounts.has(did))
    return { outcomes: plan.outcomes, changes, newDids }
  })
}
