import { describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import { apply, NSIDS, sha256, type World } from '../helpers/events.ts'
import { getPrompt } from '../helpers/get-prompt.ts'
import { useIndexerDb } from '../helpers/indexer-db.ts'

const { prompt: P, conversation: C, agent: A } = NSIDS
let db: Database
let deps: IndexerDeps
let w: World
let did: string
let other: string
useIndexerDb(
  (x) => {
    ;({ db, deps, w } = x)
  },
  (n) => {
    did = `did:plc:flags${n}aaaaaaaaaaaaaaaa`
    other = `did:plc:other${n}aaaaaaaaaaaaaaaa`
  },
)

const flagsOf = async (d: string, rkey: string) => (await getPrompt(db, NSIDS, d, rkey))?.flags

describe('orphaned', () => {
  it('sidecar first, conversation later clears it; conversation deleted sets it again', async () => {
    const rkey = w.tid()
    await apply(deps, [w.prompt({ did, rkey })])
    expect(await flagsOf(did, rkey)).toEqual(['orphaned'])
    await apply(deps, [w.conversation({ did, rkey })])
    expect(await flagsOf(did, rkey)).toEqual([])
    await apply(deps, [w.conversation({ did, rkey, op: 'delete' })])
    expect(await flagsOf(did, rkey)).toEqual(['orphaned'])
  })

  it('conversation first, or in the same batch in any order, is not orphaned', async () => {
    const r1 = w.tid()
    await apply(deps, [w.conversation({ did, rkey: r1 })])
    await apply(deps, [w.prompt({ did, rkey: r1 })])
    expect(await flagsOf(did, r1)).toEqual([])
    const r2 = w.tid()
    await apply(deps, [w.prompt({ did, rkey: r2 }), w.conversation({ did, rkey: r2 })])
    expect(await flagsOf(did, r2)).toEqual([])
  })

  it('a conversation of another repo at the same rkey does not count', async () => {
    const rkey = w.tid()
    await apply(deps, [w.conversation({ did: other, rkey }), w.prompt({ did, rkey })])
    expect(await flagsOf(did, rkey)).toEqual(['orphaned'])
  })
})

describe('mismatched', () => {
  it.each([
    ['another repo', (rkey: string) => `at://did:plc:someoneelse/${C}/${rkey}`],
    ['another collection', (rkey: string) => `at://${did}/${A}/${rkey}`],
    ['another rkey', () => `at://${did}/${C}/3jzfcijpj2z2a`],
  ])('conversation pointing at %s', async (_name, uri) => {
    const rkey = w.tid()
    await apply(deps, [
      w.conversation({ did, rkey }),
      w.prompt({ did, rkey, fields: { conversation: uri(rkey) } }),
    ])
    expect(await flagsOf(did, rkey)).toEqual(['mismatched'])
  })

  it('is cleared by a recompile that fixes the field', async () => {
    const rkey = w.tid()
    await apply(deps, [
      w.conversation({ did, rkey }),
      w.prompt({ did, rkey, fields: { conversation: `at://${did}/${C}/3jzfcijpj2z2a` } }),
    ])
    await apply(deps, [w.prompt({ did, rkey, op: 'update' })])
    expect(await flagsOf(did, rkey)).toEqual([])
  })
})

describe('coreMemoryDetached', () => {
  it('is set when coreMemory is not in content', async () => {
    const rkey = w.tid()
    await apply(deps, [
      w.conversation({ did, rkey }),
      w.prompt({ did, rkey, fields: { content: 'no memory here' } }),
    ])
    expect(await flagsOf(did, rkey)).toEqual(['coreMemoryDetached'])
  })
})

describe('staleTemplate', () => {
  it('direct rule: the agent record changes its template later, then back', async () => {
    const agentRkey = w.tid()
    const rkey = w.tid()
    const agentUri = w.agentUri(did, agentRkey)
    await apply(deps, [
      w.agent({ did, rkey: agentRkey, system: 'template v1' }),
      w.conversation({ did, rkey }),
      w.prompt({
        did,
        rkey,
        fields: {
          agent: agentUri,
          rawSystemHash: `sha256:${sha256('template v1').toUpperCase()}`,
        },
      }),
    ])
    expect(await flagsOf(did, rkey)).toEqual([])
    await apply(deps, [w.agent({ did, rkey: agentRkey, op: 'update', system: 'template v2' })])
    expect(await flagsOf(did, rkey)).toEqual(['staleTemplate'])
    await apply(deps, [w.agent({ did, rkey: agentRkey, op: 'update', system: 'template v1' })])
    expect(await flagsOf(did, rkey)).toEqual([])
  })

  // A group's rows once met each of its targets, so an agent update over a group of n prompts
  // took n^2 rows through the window: 134 s at 150 prompts, where it takes tens of ms.
  it('direct rule: an agent update re-flags a group of 150 prompts at once', async () => {
    const agentRkey = w.tid()
    const fields = {
      agent: w.agentUri(did, agentRkey),
      rawSystemHash: `sha256:${sha256('template v1').toUpperCase()}`,
    }
    const rkeys = Array.from({ length: 150 }, () => w.tid())
    await apply(deps, [w.agent({ did, rkey: agentRkey, system: 'template v1' })])
    for (let i = 0; i < rkeys.length; i += 50) {
      const slice = rkeys.slice(i, i + 50)
      await apply(
        deps,
        slice.flatMap((rkey) => [w.conversation({ did, rkey }), w.prompt({ did, rkey, fields })]),
      )
    }
    await apply(deps, [w.agent({ did, rkey: agentRkey, op: 'update', system: 'template v2' })])
    const flags = await Promise.all(rkeys.map((rkey) => flagsOf(did, rkey)))
    expect(new Set(flags.map((f) => JSON.stringify(f)))).toEqual(new Set(['["staleTemplate"]']))
  })

  it('direct rule applies across repos; agent deleted falls back to the inferred rule', async () => {
    const agentRkey = w.tid()
    const rkey = w.tid()
    const agentUri = w.agentUri(other, agentRkey)
    await apply(deps, [
      w.conversation({ did, rkey }),
      w.prompt({ did, rkey, fields: { agent: agentUri } }),
    ])
    expect(await flagsOf(did, rkey)).toEqual([])
    await apply(deps, [w.agent({ did: other, rkey: agentRkey, system: 'template v9' })])
    expect(await flagsOf(did, rkey)).toEqual(['staleTemplate'])
    await apply(deps, [w.agent({ did: other, rkey: agentRkey, op: 'delete' })])
    expect(await flagsOf(did, rkey)).toEqual([])
  })

  it('inferred rule: a newer compile of the same agent with another hash, in either arrival order', async () => {
    for (const newerFirst of [false, true]) {
      const [r1, r2] = [w.tid(), w.tid()]
      const older = w.prompt({
        did,
        rkey: r1,
        fields: {
          agent: w.agentUri(did, `x${r1}`),
          compiledAt: w.iso(-10_000_000),
        },
      })
      const newer = w.prompt({
        did,
        rkey: r2,
        fields: {
          agent: w.agentUri(did, `x${r1}`),
          rawSystemHash: sha256('template v2'),
        },
      })
      const convs = [w.conversation({ did, rkey: r1 }), w.conversation({ did, rkey: r2 })]
      await apply(deps, convs)
      if (newerFirst) {
        await apply(deps, [newer])
        await apply(deps, [older])
      } else {
        await apply(deps, [older])
        expect(await flagsOf(did, r1)).toEqual([])
        await apply(deps, [newer])
      }
      expect(await flagsOf(did, r1)).toEqual(['staleTemplate'])
      expect(await flagsOf(did, r2)).toEqual([])
      // The newer compile deleted: the older one is current again.
      await apply(deps, [w.prompt({ did, rkey: r2, op: 'delete' })])
      expect(await flagsOf(did, r1)).toEqual([])
    }
  })

  it('evidence from another repo, a far-future compiledAt, an invalid prompt or an equal instant changes nothing', async () => {
    const agentUri = w.agentUri(did, 'sharedagent')
    const r1 = w.tid()
    const at = w.iso()
    await apply(deps, [
      w.conversation({ did, rkey: r1 }),
      w.prompt({ did, rkey: r1, fields: { agent: agentUri, compiledAt: at } }),
    ])
    const ro = w.tid()
    const rf = w.tid()
    const ri = w.tid()
    const re = w.tid()
    await apply(deps, [
      // same agent at-uri, but another repo
      w.prompt({
        did: other,
        rkey: ro,
        fields: {
          agent: agentUri,
          rawSystemHash: sha256('x'),
          memfsRevision: 'rev-z',
          compiledAt: w.iso(60_000_000),
        },
      }),
      // compiledAt a year ahead of when it was indexed
      w.prompt({
        did,
        rkey: rf,
        fields: {
          agent: agentUri,
          rawSystemHash: sha256('y'),
          memfsRevision: 'rev-y',
          compiledAt: '2027-12-01T00:00:00Z',
        },
      }),
      // invalid (datetime without timezone)... but later
      w.prompt({
        did,
        rkey: ri,
        fields: {
          agent: agentUri,
          rawSystemHash: 123,
          memfsRevision: 'rev-x',
          compiledAt: w.iso(60_000_000),
        },
      }),
      // equal instant
      w.prompt({
        did,
        rkey: re,
        fields: {
          agent: agentUri,
          rawSystemHash: sha256('z'),
          memfsRevision: 'rev-w',
          compiledAt: at,
        },
      }),
    ])
    expect(await flagsOf(did, r1)).toEqual([])
    expect(await flagsOf(did, ri)).toEqual(['orphaned', 'invalid'])
  })
})

describe('staleMemory', () => {
  it('a newer compile with another memfsRevision marks older ones; unset revisions are no evidence', async () => {
    const agentUri = w.agentUri(did, 'memagent')
    const [r1, r2, r3] = [w.tid(), w.tid(), w.tid()]
    const conv = (r: string) => w.conversation({ did, rkey: r })
    await apply(deps, [
      conv(r1),
      conv(r2),
      conv(r3),
      w.prompt({
        did,
        rkey: r1,
        fields: { agent: agentUri, memfsRevision: 'aaa', compiledAt: w.iso() },
      }),
    ])
    const { memfsRevision: _, ...noRev } = w.promptRecord(did, r2, {
      agent: agentUri,
      compiledAt: w.iso(1_000_000),
    })
    await apply(deps, [w.commit({ did, collection: P, rkey: r2, record: noRev })])
    expect(await flagsOf(did, r1)).toEqual([])
    expect(await flagsOf(did, r2)).toEqual([])
    await apply(deps, [
      w.prompt({
        did,
        rkey: r3,
        fields: {
          agent: agentUri,
          memfsRevision: 'bbb',
          compiledAt: w.iso(2_000_000),
        },
      }),
    ])
    expect(await flagsOf(did, r1)).toEqual(['staleMemory'])
    expect(await flagsOf(did, r2)).toEqual([])
    // Recompiling the old one with the new memory clears it.
    await apply(deps, [
      w.prompt({
        did,
        rkey: r1,
        op: 'update',
        fields: {
          agent: agentUri,
          memfsRevision: 'bbb',
          compiledAt: w.iso(3_000_000),
        },
      }),
    ])
    expect(await flagsOf(did, r1)).toEqual([])
  })

  it('moving a prompt to another agent re-flags its old group', async () => {
    const a1 = w.agentUri(did, 'movea')
    const a2 = w.agentUri(did, 'moveb')
    const [r1, r2] = [w.tid(), w.tid()]
    await apply(deps, [
      w.conversation({ did, rkey: r1 }),
      w.conversation({ did, rkey: r2 }),
      w.prompt({ did, rkey: r1, fields: { agent: a1, memfsRevision: 'old', compiledAt: w.iso() } }),
      w.prompt({
        did,
        rkey: r2,
        fields: { agent: a1, memfsRevision: 'new', compiledAt: w.iso(1_000_000) },
      }),
    ])
    expect(await flagsOf(did, r1)).toEqual(['staleMemory'])
    await apply(deps, [
      w.prompt({
        did,
        rkey: r2,
        op: 'update',
        fields: { agent: a2, memfsRevision: 'new', compiledAt: w.iso(1_000_000) },
      }),
    ])
    expect(await flagsOf(did, r1)).toEqual([])
  })
})
