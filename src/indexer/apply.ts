import { sql } from 'drizzle-orm'
import { type Config, nsidsOf } from '../config.ts'
import { emitChanges } from '../db/change-log.ts'
import type { Database } from '../db/client.ts'
import { recomputeFlags } from '../db/recompute-flags.ts'
import { saveChains } from '../db/repo-chain.ts'
import { insertRevisionTexts, loadPreviousTexts } from '../db/revision-texts.ts'
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
import { type Nsids, ROLES, type Role } from '../model/nsids.ts'
import { isVisible, keyOf, splitKey } from '../model/rows.ts'
import { planBatch } from './merge.ts'
import type { BatchEvent, OutcomeCount } from './plan.ts'
import { PromptValidator } from './prompt-record.ts'
import { planRevisionTexts } from './revision-texts.ts'

export interface IndexerDeps {
  db: Database
  nsids: Nsids
  validator: PromptValidator
}

/** The indexer's dependencies as the configuration names them. */
export function indexerDepsFor(config: Config, db: Database): IndexerDeps {
  return {
    db,
    nsids: nsidsOf(config),
    validator: new PromptValidator(config.promptNsid),
  }
}

export interface BatchResult {
  outcomes: OutcomeCount[]
  changes: number
  /** Repos seen for the first time: their handles are worth looking up. */
  newDids: string[]
}

// Every writer (live ingestion, backfill, admin actions, in any process) takes this lock
// for its whole transaction: state read for the merge stays true until commit, and change
// seqs are assigned and committed in order, so a feed reader never sees n+1 before n.
const WRITER_LOCK = 0x70_61_76_77 // "pavw"

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
  const collectionOf: Record<Role, string> = {
    prompt: nsids.prompt,
    conversation: nsids.conversation,
    agent: nsids.agent,
  }
  return db.orm.transaction(async (tx) => {
    // Past its cost threshold JIT spends ~50 ms compiling a statement that runs in less, and a
    // batch's rows (megabytes of JSON) spill to temp files under the default work_mem.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${WRITER_LOCK}),
      set_config('jit', 'off', true), set_config('work_mem', '64MB', true)`)
    const now = new Date()

    // 1. Read the current state of everything the batch touches.
    const keys: Record<Role, Map<string, { did: string; rkey: string }>> = {
      prompt: new Map(),
      conversation: new Map(),
      agent: new Map(),
    }
    const roleOf = new Map<string, Role>(ROLES.map((r) => [collectionOf[r], r]))
    const wholeRepos = new Set<string>()
    const dids = new Set<string>()
    for (const ev of events) {
      dids.add(ev.did)
      if (ev.kind === 'commit') {
        const role = roleOf.get(ev.collection)
        if (role) keys[role].set(keyOf(ev.did, ev.rkey), { did: ev.did, rkey: ev.rkey })
      } else if (ev.kind === 'snapshot' || ev.kind === 'prune') {
        wholeRepos.add(ev.did)
      }
    }
    const repos = [...wholeRepos]
    const [prompt, conversation, agent, accounts] = await Promise.all([
      loadRecords(db, tx, 'prompt', [...keys.prompt.values()], repos),
      loadRecords(db, tx, 'conversation', [...keys.conversation.values()], repos),
      loadRecords(db, tx, 'agent', [...keys.agent.values()], repos),
      loadAccounts(db, tx, [...dids]),
    ])

    // 2. Fold the events over it.
    const plan = planBatch(
      events,
      { records: { prompt, conversation, agent }, accounts },
      nsids,
      deps.validator,
    )

    // 3. Write: accounts, purges, records, history, visibility.
    const finalAccounts = new Map([...accounts, ...plan.accounts])
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
    const texts = planRevisionTexts(
      plan.revisions.map((r) => ({ ...r, contentHash: r.facts.contentHash })),
      await loadPreviousTexts(db, tx, [...textKeys.values()]),
    )
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
        compiled_at: r.facts.compiledAt,
        raw_system_hash: r.facts.rawSystemHash,
        memfs_revision: r.facts.memfsRevision,
        content_hash: r.facts.contentHash,
        core_memory_hash: texts.refs[i].coreMemoryHash,
        core_memory_at: texts.refs[i].coreMemoryAt,
        core_memory_length: texts.refs[i].coreMemoryLength,
      })),
      now,
    )
    await insertRevisionTexts(tx, texts.texts)
    await setHidden(tx, plan.visibility)
    await saveChains(tx, [...plan.chains.values()], now)

    // 4. Flags that depend on other records.
    const written = (role: Role) => [...plan.rows[role].keys()].map((k) => splitKey(k))
    const groups = new Map<string, { did: string; agent_uri: string }>()
    for (const [key, row] of plan.rows.prompt) {
      for (const uri of [row.agentUri, plan.previousAgentUris.get(key) ?? null]) {
        if (uri) groups.set(`${row.did}\u0000${uri}`, { did: row.did, agent_uri: uri })
      }
    }
    const slots = [...written('prompt'), ...written('conversation')].map(([did, rkey]) => ({
      did,
      rkey,
    }))
    const flagged = await recomputeFlags(db, tx, {
      slots,
      groups: [...groups.values()],
      agents: written('agent').map(([did, rkey]) => ({ did, rkey })),
      agentRepos: [...plan.purged],
    })

    // 5. The change log, then the cursor: both commit with the writes they describe.
    const reposChanged = [...new Set([...plan.visibility.keys(), ...plan.purged])]
    let changes = 0
    for (const role of ROLES) {
      const touched = new Map(written(role).map(([did, rkey]) => [keyOf(did, rkey), { did, rkey }]))
      if (role === 'prompt') for (const k of flagged) touched.set(keyOf(k.did, k.rkey), k)
      changes += await emitChanges(
        db,
        tx,
        role,
        collectionOf[role],
        [...touched.values()],
        reposChanged,
      )
    }
    if (cursor) await saveCursor(tx, cursor, now)
    const newDids = [...plan.accounts.keys()].filter((did) => !accounts.has(did))
    return { outcomes: plan.outcomes, changes, newDids }
  })
}
