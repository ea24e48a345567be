import { and, asc, eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import type { CompileInput } from '../../demo-network/letta-compile.ts'
import type { Database } from '../../src/db/client.ts'
import { changes, promptRevisions, prompts } from '../../src/db/schema.ts'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import { countOutcomes } from '../../src/indexer/pipeline.ts'
import { flagsToNames } from '../../src/model/flags.ts'
import { createMetrics } from '../../src/observe/metrics.ts'
import { apply, NSIDS, type World } from '../helpers/events.ts'
import { useIndexerDb } from '../helpers/indexer-db.ts'
import { editedFiles, LETTA_SYSTEM, lettaFields } from '../helpers/letta-recompiles.ts'

// Letta-shaped records of each recompile kind, ingested, and the anatomy read back from
// the prompt row, its revisions and the change log (SPEC 14).

let db: Database
let deps: IndexerDeps
let w: World
let did: string
useIndexerDb(
  (x) => {
    ;({ db, deps, w } = x)
  },
  (n) => {
    did = `did:plc:anatomy${n}aaaaaaaaaaaaaaa`
  },
)

const REV = (c: string) => c.repeat(40)

/** A compiledPrompt's fields in this test's repo as Letta compiles them now (the world's clock). */
const letta = (over: Partial<CompileInput> = {}) => lettaFields(w, did, over)

async function current(rkey: string) {
  const [row] = await db.orm
    .select({ changed: prompts.changed, memoryFiles: prompts.memoryFiles, flags: prompts.flags })
    .from(prompts)
    .where(and(eq(prompts.did, did), eq(prompts.rkey, rkey)))
  return row
}

async function revisions(rkey: string) {
  return db.orm
    .select({ changed: promptRevisions.changed, memoryFiles: promptRevisions.memoryFiles })
    .from(promptRevisions)
    .where(and(eq(promptRevisions.did, did), eq(promptRevisions.rkey, rkey)))
    .orderBy(asc(promptRevisions.rev))
}

async function changeLines(rkey: string) {
  return db.orm
    .select({ op: changes.op, changed: changes.changed })
    .from(changes)
    .where(and(eq(changes.did, did), eq(changes.rkey, rkey), eq(changes.collection, NSIDS.prompt)))
    .orderBy(asc(changes.seq))
}

describe('recompile anatomy, stored', () => {
  it('each kind of Letta recompile lands on the prompt, its revisions and the change log', async () => {
    const rkey = w.tid()
    await apply(deps, [w.conversation({ did, rkey })])
    await apply(deps, [w.prompt({ did, rkey, fields: letta() })])
    expect(await current(rkey)).toMatchObject({ changed: [], memoryFiles: [] })
    w.tick(3_600_000_000)
    await apply(deps, [
      w.prompt({ did, rkey, op: 'update', fields: letta({ previousMessageCount: 9 }) }),
    ])
    expect(await current(rkey)).toMatchObject({ changed: ['metadata'], memoryFiles: [] })
    const files = editedFiles('human.md', 'The user is Sam. Sam likes tea.')
    await apply(deps, [
      w.prompt({ did, rkey, op: 'update', fields: letta({ files, memfsRevision: REV('b') }) }),
    ])
    expect(await current(rkey)).toMatchObject({ changed: ['memory'], memoryFiles: ['human.md'] })
    const system = `${LETTA_SYSTEM}\nNever lie.`
    await apply(deps, [
      w.prompt({
        did,
        rkey,
        op: 'update',
        fields: letta({ files, memfsRevision: REV('b'), system }),
      }),
    ])
    expect(await current(rkey)).toMatchObject({ changed: ['template'], memoryFiles: [] })
    expect(await revisions(rkey)).toEqual([
      { changed: [], memoryFiles: [] },
      { changed: ['metadata'], memoryFiles: [] },
      { changed: ['memory'], memoryFiles: ['human.md'] },
      { changed: ['template'], memoryFiles: [] },
    ])
    expect((await changeLines(rkey)).map((c) => c.changed)).toEqual([
      [],
      ['metadata'],
      ['memory'],
      ['template'],
    ])
  })

  it('two recompiles in one batch: the second compares with the first', async () => {
    const rkey = w.tid()
    await apply(deps, [w.prompt({ did, rkey, fields: letta() })])
    const files = editedFiles('persona.md', '---\ndescription: self\n---\nI am Esme, older.')
    await apply(deps, [
      w.prompt({ did, rkey, op: 'update', fields: letta({ files, memfsRevision: REV('c') }) }),
      w.prompt({
        did,
        rkey,
        op: 'update',
        fields: letta({ files, memfsRevision: REV('c'), previousMessageCount: 12 }),
      }),
    ])
    expect(await revisions(rkey)).toEqual([
      { changed: [], memoryFiles: [] },
      { changed: ['memory'], memoryFiles: ['persona.md'] },
      { changed: ['metadata'], memoryFiles: [] },
    ])
    expect(await current(rkey)).toMatchObject({ changed: ['metadata'] })
  })

  it('content not in Letta format is other; a create after a delete starts again', async () => {
    const rkey = w.tid()
    await apply(deps, [w.prompt({ did, rkey, fields: { coreMemory: 'plain one' } })])
    await apply(deps, [w.prompt({ did, rkey, op: 'update', fields: { coreMemory: 'plain two' } })])
    expect(await current(rkey)).toMatchObject({ changed: ['other'], memoryFiles: [] })
    await apply(deps, [w.prompt({ did, rkey, op: 'delete' })])
    expect(await current(rkey)).toMatchObject({ changed: null, memoryFiles: null })
    await apply(deps, [w.prompt({ did, rkey, fields: letta() })])
    expect(await current(rkey)).toMatchObject({ changed: [], memoryFiles: [] })
  })
})

describe('prompt_appview_recompiles_total', () => {
  it('counts each recompile under each of its kinds', async () => {
    const metrics = createMetrics({ version: 'test', collections: Object.values(NSIDS) })
    const count = async (fields: Record<string, unknown>, op: 'create' | 'update' = 'update') =>
      countOutcomes(metrics, 'jetstream', await apply(deps, [w.prompt({ did, rkey, op, fields })]))
    const rkey = w.tid()
    await count(letta(), 'create')
    w.tick(1_000_000)
    await count(letta({ previousMessageCount: 5 }))
    const templateAndMemory = letta({ system: 'New {CORE_MEMORY}', memfsRevision: REV('d') })
    await count(templateAndMemory)
    // Same hash and revision, a core memory content lacks: not Letta's format, so other.
    await count({ ...templateAndMemory, coreMemory: 'not Letta' })
    const values = (await metrics.recompilesTotal.get()).values
    const byKind = Object.fromEntries(values.map((v) => [v.labels.kind, v.value]))
    expect(byKind).toEqual({ template: 1, memory: 1, metadata: 1, other: 1 })
  })
})

describe('staleness against Letta semantics', () => {
  it('a metadata-only recompile never flags staleMemory or staleTemplate', async () => {
    const [r1, r2] = [w.tid(), w.tid()]
    await apply(deps, [
      w.agent({ did, rkey: 'agentrkey', system: LETTA_SYSTEM }),
      w.conversation({ did, rkey: r1 }),
      w.conversation({ did, rkey: r2 }),
      w.prompt({ did, rkey: r1, fields: letta({ conversationId: 'conv-1' }) }),
      w.prompt({ did, rkey: r2, fields: letta({ conversationId: 'conv-2' }) }),
    ])
    // Each recompiles in place, again and again: only the metadata block moves.
    for (let i = 1; i <= 3; i++) {
      w.tick(60_000_000)
      for (const [rkey, conv] of [
        [r1, 'conv-1'],
        [r2, 'conv-2'],
      ]) {
        const fields = letta({ conversationId: conv, previousMessageCount: 4 + i })
        await apply(deps, [w.prompt({ did, rkey, op: 'update', fields })])
        const row = await current(rkey)
        expect(row.changed).toEqual(['metadata'])
        expect(flagsToNames(row.flags)).toEqual([])
      }
    }
  })
})
