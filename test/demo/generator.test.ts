import { readFileSync } from 'node:fs'
import { cidForCbor } from '@atproto/common'
import { isValidTid } from '@atproto/syntax'
import { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import { createGenerator, type JetstreamEvent } from '../../demo-network/generator.ts'
import { buildSample, LETTA_SHAPES, lettaShapes, NSIDS, replay } from '../../scripts/make-sample.ts'
import { lettaParts } from '../../src/model/recompile-anatomy.ts'
import { createReferenceModel, FLAG_NAMES } from '../helpers/reference-model.ts'

const small = { contentBytes: { min: 1500, max: 5000 } }
const isPrompt = (e: JetstreamEvent) =>
  e.kind === 'commit' && e.commit.collection === NSIDS.promptNsid

describe('demo generator', () => {
  it('is deterministic for a seed and differs across seeds', () => {
    const a = createGenerator({ seed: 42, ...small }).generate(1500)
    const b = createGenerator({ seed: 42, ...small }).generate(1500)
    const c = createGenerator({ seed: 43, ...small }).generate(1500)
    expect(JSON.stringify(a)).toBe(JSON.stringify(b))
    expect(JSON.stringify(a)).not.toBe(JSON.stringify(c))
  })

  it('writes valid TIDs, increasing revs per DID and increasing time_us', () => {
    const events = createGenerator({ seed: 5, ...small, realCids: false }).generate(20_000)
    const lastRev = new Map<string, string>()
    let lastTime = 0
    for (const e of events) {
      expect(e.time_us).toBeGreaterThan(lastTime)
      lastTime = e.time_us
      if (e.kind !== 'commit') continue
      expect(isValidTid(e.commit.rev)).toBe(true)
      // The only non-TID keys are the deliberate `nonTidRkey` conversation slots.
      if (!e.commit.rkey.startsWith('conv-')) expect(isValidTid(e.commit.rkey)).toBe(true)
      expect(e.commit.rev > (lastRev.get(e.did) ?? '')).toBe(true)
      lastRev.set(e.did, e.commit.rev)
      expect(e.did).toMatch(/^did:plc:[a-z2-7]{24}$/)
    }
  })

  it('keeps prompt content within the configured byte range', () => {
    const range = { min: 3000, max: 9000 }
    const g = createGenerator({ seed: 9, contentBytes: range, realCids: false })
    let seen = 0
    for (const e of g.generate(8000)) {
      if (!isPrompt(e) || e.kind !== 'commit' || !e.commit.record) continue
      const content = e.commit.record.content as string
      const bytes = Buffer.byteLength(content, 'utf8')
      // overLimit invalid prompts are the one deliberate exception.
      if (bytes > 200_000) continue
      expect(bytes).toBeGreaterThanOrEqual(range.min)
      expect(bytes).toBeLessThanOrEqual(range.max)
      seen++
    }
    expect(seen).toBeGreaterThan(1000)
  })

  it('writes real dag-cbor CIDs, or parseable CIDv1 when realCids is false', async () => {
    const real = createGenerator({ seed: 3, ...small }).generate(300)
    const fake = createGenerator({ seed: 3, ...small, realCids: false }).generate(300)
    let checked = 0
    for (const [i, e] of real.entries()) {
      if (e.kind !== 'commit' || !e.commit.cid) continue
      const cid = CID.parse(e.commit.cid)
      expect(cid.version).toBe(1)
      expect(cid.code).toBe(0x71)
      if (checked++ < 40) expect((await cidForCbor(e.commit.record)).toString()).toBe(e.commit.cid)
      const f = fake[i]
      expect(f.kind === 'commit' && CID.parse(f.commit.cid!).code).toBe(0x71)
    }
    expect(checked).toBeGreaterThan(100)
  })

  it('writes Jetstream v1 account and identity shapes', () => {
    const events = createGenerator({ seed: 11, ...small, realCids: false }).generate(5000)
    const account = events.find((e) => e.kind === 'account')
    const identity = events.find((e) => e.kind === 'identity')
    expect(account?.kind === 'account' && account.account.did).toBe(account?.did)
    expect(account?.kind === 'account' && typeof account.account.seq).toBe('number')
    expect(identity?.kind === 'identity' && identity.identity.handle).toMatch(/\.example\.com$/)
    for (const e of events) {
      if (e.kind === 'commit' && e.commit.operation === 'delete') {
        expect(e.commit.record).toBeUndefined()
        expect(e.commit.cid).toBeUndefined()
      }
      if (e.kind === 'account') expect(e.account.active).toBe(e.account.status === undefined)
    }
  })

  it('produces every anomaly and every flag in a modest run', () => {
    const g = createGenerator({ seed: 1, ...small, realCids: false })
    const model = createReferenceModel(NSIDS)
    for (let i = 0; i < 25_000; i++) model.apply(JSON.parse(JSON.stringify(g.next())))
    const kinds = Object.keys(g.stats().anomalies)
    for (const want of [
      'sidecarFirst',
      'mismatched:rkey',
      'mismatched:collection',
      'mismatched:did',
      'coreMemoryDetached',
      'invalid:missingField',
      'invalid:wrongType',
      'invalid:naiveDatetime',
      'invalid:badAtUri',
      'invalid:overLimit',
      'nonTidRkey',
      'hashVariant:prefix',
      'hashVariant:upper',
      'futureCompiledAt',
      'offsetCompiledAt',
      'recompile',
      'templateChange',
      'templateChange:noSystem',
      'memfsBump',
      'conversationDelete',
      'promptDelete',
      'takedown:takendown',
      'reactivation',
      'purge',
      'identity',
      'noise:post',
      'noise:other',
      'noise:account',
      'noise:identity',
    ]) {
      expect(kinds).toContain(want)
    }
    const stats = model.stats()
    for (const f of [...FLAG_NAMES, 'ok'] as const) expect(stats.flags[f]).toBeGreaterThan(0)
    const rules = new Set(model.promptDetails().map((p) => p.staleTemplateRule))
    expect(rules).toContain('agentHash')
    expect(rules).toContain('inferred')
  })

  it('rejects bad options with every problem named', () => {
    expect(() => createGenerator({ dids: 0, contentBytes: { min: 10, max: 5 } })).toThrow(
      /dids.*contentBytes\.min.*contentBytes\.max/,
    )
  })
})

describe('examples/sample.ndjson', () => {
  const url = new URL('../../examples/', import.meta.url)
  const lines = readFileSync(new URL('sample.ndjson', url), 'utf8').split('\n').filter(Boolean)
  const expected = JSON.parse(readFileSync(new URL('sample.expected.json', url), 'utf8'))

  it('yields every flag, both staleTemplate rules and the expected end state', () => {
    const { model, outcomes } = replay(lines)
    expect(lines.length).toBeGreaterThanOrEqual(300)
    expect(lines.length).toBeLessThanOrEqual(600)
    const stats = model.stats()
    for (const f of [...FLAG_NAMES, 'ok'] as const) expect(stats.flags[f]).toBeGreaterThan(0)
    const rules = new Set(model.promptDetails().map((p) => p.staleTemplateRule))
    expect(rules).toEqual(new Set(['agentHash', 'inferred', null]))
    expect(outcomes.skipped).toBe(4)
    expect(stats).toEqual(expected.stats)
    expect(model.visibleState().prompts).toEqual(expected.prompts)
  })

  it('ends in the same state when replayed twice', () => {
    const once = replay(lines).model.visibleState()
    expect(replay([...lines, ...lines]).model.visibleState()).toEqual(once)
  })

  it('holds records as Letta writes them: both memfs formats, both template kinds', () => {
    expect([...lettaShapes(lines)].sort()).toEqual([...LETTA_SHAPES].sort())
    let prompts = 0
    for (const line of lines) {
      const e = JSON.parse(line.startsWith('{"did"') && line.endsWith('}') ? line : '{}')
      const r = e.commit?.collection === NSIDS.promptNsid ? e.commit.record : null
      if (typeof r?.content !== 'string' || !r.content.includes(r.coreMemory)) continue
      prompts++
      // Every attached core memory ends with Letta's metadata block, in its format.
      expect(lettaParts(r.content, r.coreMemory)).not.toBeNull()
      if (r.memfsRevision !== undefined) expect(r.memfsRevision).toMatch(/^[0-9a-f]{40}$/)
    }
    expect(prompts).toBeGreaterThan(100)
    const kinds = buildSample(expected.seed).generator.anomalies
    for (const k of ['template', 'memory', 'metadata'])
      expect(kinds[`recompile:${k}`]).toBeGreaterThan(0)
  })

  it('is what scripts/make-sample.ts makes today', () => {
    expect(buildSample(expected.seed).lines).toEqual(lines)
  })
})
