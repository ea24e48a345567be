import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { tidFromMicros } from '../../demo-network/tid.ts'
import { createReferenceModel } from '../helpers/reference-model.ts'

// Hand-made events pin down the oracle's reading of SPEC sections 3 and 4.

const NS = {
  promptNsid: 'xyz.quasigod.lab.letta.compiledPrompt',
  conversationNsid: 'xyz.quasigod.lab.letta.conversation',
  agentNsid: 'xyz.quasigod.lab.letta.agent',
}
const A = 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa'
const B = 'did:plc:bbbbbbbbbbbbbbbbbbbbbbbb'
const T0 = 1764460800000000
const tid = (n: number) => tidFromMicros(T0 + n * 1000, 7)
const AGENT = tid(1)
const agentUri = (did = A) => `at://${did}/${NS.agentNsid}/${AGENT}`
const sha = (s: string) => createHash('sha256').update(s).digest('hex')

function setup() {
  const m = createReferenceModel(NS)
  let clock = 0
  const commit = (
    did: string,
    collection: string,
    operation: string,
    rkey: string,
    record?: object,
  ) => {
    clock++
    const cid = record ? `bafy${sha(JSON.stringify(record)).slice(0, 20)}` : undefined
    const ev = {
      did,
      time_us: T0 + clock * 1000,
      kind: 'commit',
      commit: { rev: tid(clock + 100), operation, collection, rkey, record, cid },
    }
    return m.apply(ev)
  }
  const prompt = (did: string, n: number, fields: Record<string, unknown> = {}, op = 'create') =>
    commit(did, NS.promptNsid, op, tid(n), {
      $type: NS.promptNsid,
      agent: agentUri(did),
      conversation: `at://${did}/${NS.conversationNsid}/${tid(n)}`,
      content: 'template MEMORY end',
      coreMemory: 'MEMORY',
      rawSystemHash: sha('v1'),
      memfsRevision: 'r1',
      compiledAt: new Date(Date.UTC(2025, 10, 30, 0, 0, n)).toISOString(),
      ...fields,
    })
  const conversation = (did: string, n: number, op = 'create') =>
    commit(
      did,
      NS.conversationNsid,
      op,
      tid(n),
      op === 'delete' ? undefined : { $type: NS.conversationNsid },
    )
  const agent = (did: string, system?: string, op = 'create') =>
    commit(did, NS.agentNsid, op, AGENT, {
      $type: NS.agentNsid,
      name: 'x',
      ...(system ? { system } : {}),
    })
  const flags = (did: string, n: number) =>
    m.visibleState().prompts.find((p) => p.did === did && p.rkey === tid(n))?.flags
  return { m, commit, prompt, conversation, agent, flags }
}

describe('reference model', () => {
  it('follows the conversation for orphaned, and the slot for mismatched', () => {
    const t = setup()
    t.prompt(A, 10)
    expect(t.flags(A, 10)).toEqual(['orphaned'])
    t.conversation(A, 10)
    expect(t.flags(A, 10)).toEqual([])
    t.conversation(A, 10, 'delete')
    expect(t.flags(A, 10)).toEqual(['orphaned'])
    t.prompt(A, 11, { conversation: `at://${B}/${NS.conversationNsid}/${tid(11)}` })
    t.conversation(A, 11)
    expect(t.flags(A, 11)).toEqual(['mismatched'])
  })

  it('compares the agent template hash after normalising', () => {
    const t = setup()
    t.agent(A, 'v1')
    t.conversation(A, 10)
    t.prompt(A, 10, { rawSystemHash: `SHA256:${sha('v1').toUpperCase()}` })
    expect(t.flags(A, 10)).toEqual([])
    t.agent(A, 'v2', 'update')
    expect(t.flags(A, 10)).toEqual(['staleTemplate'])
  })

  it('infers staleness only from valid, same-repo, strictly later, not-future compiles', () => {
    const t = setup()
    t.agent(A) // no system: the inferred rule applies
    for (const n of [10, 11, 12, 13]) t.conversation(A, n)
    t.prompt(A, 10, { compiledAt: '2025-11-30T00:00:10.000Z' })
    // Same instant written with an offset: not later.
    t.prompt(A, 11, {
      compiledAt: '2025-11-30T05:30:10.000+05:30',
      rawSystemHash: sha('v2'),
      memfsRevision: 'r2',
    })
    expect(t.flags(A, 10)).toEqual([])
    // Invalid (naive datetime) is not evidence; neither is another repo.
    t.prompt(A, 12, { compiledAt: '2025-11-30T00:01:00.000', rawSystemHash: sha('v2') })
    t.prompt(B, 12, {
      agent: agentUri(A),
      rawSystemHash: sha('v2'),
      compiledAt: '2025-11-30T00:01:00Z',
    })
    expect(t.flags(A, 10)).toEqual([])
    // More than five minutes ahead of its indexing: not evidence.
    t.prompt(A, 13, { compiledAt: '2025-11-30T01:00:00.000Z', memfsRevision: 'r3' })
    expect(t.flags(A, 10)).toEqual([])
    // One microsecond later is later.
    t.prompt(A, 13, { compiledAt: '2025-11-30T00:00:10.000001Z', memfsRevision: 'r3' }, 'update')
    expect(t.flags(A, 10)).toEqual(['staleMemory'])
    t.prompt(
      A,
      13,
      { compiledAt: '2025-11-30T00:00:10.000001Z', rawSystemHash: sha('v3') },
      'update',
    )
    expect(t.flags(A, 10)).toEqual(['staleTemplate'])
    expect(t.flags(A, 12)).toEqual(['invalid'])
  })

  it('flags a detached core memory and keeps invalid prompts', () => {
    const t = setup()
    t.conversation(A, 10)
    t.prompt(A, 10, { coreMemory: 'OTHER', content: 'é'.repeat(100_001) })
    expect(t.flags(A, 10)).toEqual(['coreMemoryDetached', 'invalid'])
  })

  it('guards with revs and tombstones, and counts recompiles', () => {
    const t = setup()
    const rkey = tid(10)
    const ev = (rev: string, operation: string, content?: string) => ({
      did: A,
      time_us: T0 + 1,
      kind: 'commit',
      commit: {
        rev,
        operation,
        collection: NS.conversationNsid,
        rkey,
        ...(content ? { record: { content }, cid: `bafy${content}` } : {}),
      },
    })
    expect(t.m.apply(ev(tid(20), 'create', 'a'))).toBe('applied')
    expect(t.m.apply(ev(tid(21), 'update', 'b'))).toBe('applied')
    expect(t.m.apply(ev(tid(20), 'update', 'a'))).toBe('ignored')
    expect(t.m.apply(ev(tid(22), 'delete'))).toBe('applied')
    expect(t.m.apply(ev(tid(20), 'create', 'a'))).toBe('ignored')
    expect(t.m.visibleState().conversations).toEqual([])
    t.prompt(A, 11)
    t.prompt(A, 11, { content: 'x MEMORY' }, 'update')
    t.prompt(A, 11, { content: 'y MEMORY' }, 'update')
    expect(t.m.visibleState().prompts[0].recompiles).toBe(2)
    t.commit(A, NS.promptNsid, 'delete', tid(11))
    t.prompt(A, 11)
    expect(t.m.visibleState().prompts[0].recompiles).toBe(0)
  })

  it('hides, shows and purges with account events, ignoring older ones', () => {
    const t = setup()
    t.conversation(A, 10)
    t.prompt(A, 10)
    const account = (seq: number, active: boolean, status?: string) =>
      t.m.apply({
        did: A,
        time_us: T0 + seq,
        kind: 'account',
        account: { active, did: A, seq, status, time: 'x' },
      })
    account(5, false, 'takendown')
    expect(t.m.stats().prompts).toBe(0)
    expect(account(4, true)).toBe('ignored')
    account(6, true)
    expect(t.m.stats()).toMatchObject({ prompts: 1, conversations: 1, flags: { ok: 1 } })
    account(7, false, 'deleted')
    account(8, true)
    expect(t.m.stats().prompts).toBe(0)
  })

  it('skips what it cannot read', () => {
    const { m } = setup()
    expect(m.apply('x')).toBe('skipped')
    expect(m.apply({ did: A, time_us: 1, kind: 'labels' })).toBe('skipped')
    expect(m.apply({ did: A, time_us: 1, kind: 'commit', commit: { operation: 'create' } })).toBe(
      'skipped',
    )
    const commit = {
      rev: tid(1),
      operation: 'create',
      collection: NS.promptNsid,
      rkey: tid(1),
      record: 'str',
      cid: 'bafy',
    }
    expect(m.apply({ did: A, time_us: 1, kind: 'commit', commit })).toBe('skipped')
    expect(
      m.apply({
        did: A,
        time_us: 1,
        kind: 'commit',
        commit: { ...commit, collection: 'app.bsky.feed.post' },
      }),
    ).toBe('skipped')
  })
})
