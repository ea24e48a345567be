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
  loadCurrentVersions,
  loadRecords,
  purgeRepos,
  saveCursor,
  setHidden,
  upsertAccounts,
  upsertRecords,
} from '../db/writes.ts'
import type { CursorPosition } from '../model/events.ts'
import { type Nsids, ROLES, type Role, roleOf } from '../model/nsids.ts'
import type { RecompileKind } from '../model/recompile-anatomy.ts'
import { isVisible, keyOf, type PreviousText, splitKey, type TextRow } from '../model/rows.ts'
import { steadyNowMs } from '../observe/clock.ts'
import { planBatch } from './merge.ts'
import type { BatchEvent, BatchPlan, LoadedState, OutcomeCount } from './plan.ts'
import { planRevisionTexts, type RevisionTextRefs } from './revision-texts.ts'

/** What applying a batch needs: a strict part of the process's one dependency bag. */
export type IndexerDeps = Pick<AppContext, 'db' | 'nsids' | 'validator'>

export interface BatchResult {
  outcomes: OutcomeCount[]
  changes: number
  /** Repos seen for the first time: their handles are worth looking up. */
  newDids: string[]
  /** Each recompile's kinds (SPEC 14), one entry per kind: what the recompile metric counts. */
  recompiles: RecompileKind[]
}

type RecordKey = { did: string; rkey: string }

/** The keys a batch's events touch, per role, and the repos it touches whole. */
function touchedKeys(events: BatchEvent[], nsids: Nsids) {
  const keys: Record<Role, Map<string, RecordKey>> = {
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

/** Every prompt a revision may be written for: a commit's, or a snapshot's. */
function revisedPrompts(events: BatchEvent[], nsids: Nsids, commits: Map<string, RecordKey>) {
  const prompts = new Map(commits)
  for (const ev of events) {
    if (ev.kind !== 'snapshot') continue
    for (const r of ev.records)
      if (roleOf(nsids, r.collection) === 'prompt')
        prompts.set(keyOf(ev.did, r.rkey), { did: ev.did, rkey: r.rkey })
  }
  return [...prompts.values()]
}

/** What a batch is planned from: the state it touches, and the prompts' current texts. */
interface Loaded {
  state: LoadedState
  previousTexts: Map<string, PreviousText>
}

/** 1. The current state of everything the batch touches. */
async function load(tx: Executor, events: BatchEvent[], nsids: Nsids): Promise<Loaded> {
  const { keys, repos, dids } = touchedKeys(events, nsids)
  const prompts = revisedPrompts(events, nsids, keys.prompt)
  const [prompt, conversation, agent, accounts, previousTexts, versions] = await Promise.all([
    loadRecords(tx, 'prompt', [...keys.prompt.values()], repos),
    loadRecords(tx, 'conversation', [...keys.conversation.values()], repos),
    loadRecords(tx, 'agent', [...keys.agent.values()], repos),
    loadAccounts(tx, dids),
    // Revision texts delta against the current content, so it is read before it is replaced.
    loadPreviousTexts(tx, prompts),
    // A new revision's anatomy compares with the version it replaces.
    loadCurrentVersions(tx, prompts),
  ])
  const records = { prompt, conversation, agent }
  return { state: { records, accounts, versions }, previousTexts }
}

/** What a batch writes: the fold of its events, and its revisions' texts. */
interface Planned {
  plan: BatchPlan
  texts: { texts: TextRow[]; refs: RevisionTextRefs[] }
}

/** 2. Folds the events over what was loaded; no I/O. */
async function plan(deps: IndexerDeps, events: BatchEvent[], loaded: Loaded): Promise<Planned> {
  const plan = planBatch(events, loaded.state, deps.nsids, deps.validator)
  // A repo purged in this batch loses its texts, so nothing may rest on them.
  const previous = new Map(
    [...loaded.previousTexts].filter(([k]) => !plan.purged.has(splitKey(k)[0])),
  )
  const texts = await planRevisionTexts(
    plan.revisions.map((r) => ({ ...r, contentHash: r.facts.contentHash })),
    previous,
  )
  return { plan, texts }
}

/** 3a. Accounts, purges, records, history, visibility and chains. */
async function writePlan(
  tx: Executor,
  { plan, texts }: Planned,
  loaded: LoadedState,
  now: Date,
): Promise<void> {
  const finalAccounts = new Map([...loaded.accounts, ...plan.accounts])
  const hiddenOf = (did: string) => {
    const acc = finalAccounts.get(did)
    return acc ? !isVisible(acc) : false
  }
  await upsertAccounts(tx, [...plan.accounts.values()], now)
  await purgeRepos(tx, [...plan.purged])
  for (const role of ROLES)
    await upsertRecords(tx, role, [...plan.rows[role].values()], hiddenOf, now)
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
      changed: r.anatomy.changed,
      memoryFiles: r.anatomy.memoryFiles,
      ...texts.refs[i],
    })),
    now,
  )
  await insertRevisionTexts(tx, texts.texts)
  await setHidden(tx, plan.visibility)
  await saveChains(tx, [...plan.chains.values()], now)
}

const written = (plan: BatchPlan, role: Role): RecordKey[] =>
  [...plan.rows[role].keys()].map((k) => {
    const [did, rkey] = splitKey(k)
    return { did, rkey }
  })

/** 3b. Flags that depend on other records: returns the prompts whose flags changed. */
function reflag(tx: Executor, plan: BatchPlan): Promise<RecordKey[]> {
  const groups = new Map<string, { did: string; agent_uri: string }>()
  for (const [key, row] of plan.rows.prompt) {
    for (const uri of [row.agentUri, plan.previousAgentUris.get(key) ?? null]) {
      if (uri) groups.set(`${row.did}\u0000${uri}`, { did: row.did, agent_uri: uri })
    }
  }
  return recomputeFlags(tx, {
    slots: [...written(plan, 'prompt'), ...written(plan, 'conversation')],
    groups: [...groups.values()],
    agents: written(plan, 'agent'),
    agentRepos: [...plan.purged],
  })
}

/** 3c. The change log of what the batch wrote or re-flagged; returns the rows emitted. */
async function logChanges(
  nsids: Nsids,
  tx: Executor,
  plan: BatchPlan,
  flagged: RecordKey[],
): Promise<number> {
  const reposChanged = [...new Set([...plan.visibility.keys(), ...plan.purged])]
  let changes = 0
  for (const role of ROLES) {
    const touched = new Map(written(plan, role).map((k) => [keyOf(k.did, k.rkey), k]))
    if (role === 'prompt') for (const k of flagged) touched.set(keyOf(k.did, k.rkey), k)
    changes += await emitChanges(tx, role, nsids[role], [...touched.values()], reposChanged)
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
  return deps.db.transaction(async (tx) => {
    await beginWriterTransaction(tx)
    const now = new Date(steadyNowMs())
    const loaded = await load(tx, events, deps.nsids)
    const planned = await plan(deps, events, loaded)
    await writePlan(tx, planned, loaded.state, now)
    const flagged = await reflag(tx, planned.plan)
    // The change log, then the cursor: both commit with the writes they describe.
    const changes = await logChanges(deps.nsids, tx, planned.plan, flagged)
    if (cursor) await saveCursor(tx, cursor, now)
    const { outcomes, accounts, revisions } = planned.plan
    const newDids = [...accounts.keys()].filter((did) => !loaded.state.accounts.has(did))
    const recompiles = revisions.flatMap((r) => r.anatomy.changed)
    return { outcomes, changes, newDids, recompiles }
  })
}
