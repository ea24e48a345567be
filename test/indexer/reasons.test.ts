import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { detachedReason } from '../../src/api/flag-reasons.ts'
import type { Database } from '../../src/db/client.ts'
import { applyBatch } from '../../src/indexer/apply.ts'
import { normalizeJetstreamEvent } from '../../src/ingest/jetstream/event.ts'
import type { IndexEvent } from '../../src/model/events.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { indexerDeps, NSIDS } from '../helpers/events.ts'
import { getPromptView } from '../helpers/get-prompt.ts'
import { createReferenceModel, FLAG_NAMES } from '../helpers/reference-model.ts'
import { testTraffic } from '../helpers/traffic.ts'

// `reasons` against the reference model on generated traffic: every visible prompt's
// reasons have exactly the model's flags as keys, and each sentence names evidence that
// is really there (the agent's hash for the direct template rule, a later compile of the
// same repo and agent with a different value for the inferred rules).

const collections = new Set(Object.values(NSIDS))
const AT_URI = /at:\/\/[^\s,;()]+/g

function normalize(lines: unknown[]): IndexEvent[] {
  const out: IndexEvent[] = []
  for (const line of lines) {
    const r = normalizeJetstreamEvent(line as string, { collections })
    if (r.ok && r.item.event) out.push(r.item.event)
  }
  return out
}

let db: Database
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

interface Row {
  did: string
  rkey: string
  agent_uri: string | null
  raw_system_hash: string | null
  memfs_revision: string | null
  compiled_us: string | number | null
  evidence: boolean
}

describe('reasons = flags, on the reference model traffic', () => {
  it('names real evidence for every flag of every visible prompt', async () => {
    const gen = testTraffic({ seed: 5, dids: 10 })
    const raw = gen.generate(2500)
    const model = createReferenceModel({
      promptNsid: NSIDS.prompt,
      conversationNsid: NSIDS.conversation,
      agentNsid: NSIDS.agent,
    })
    for (const e of raw) model.apply(e)
    const events = normalize(raw)
    const deps = indexerDeps(db)
    for (let i = 0; i < events.length; i += 97)
      await applyBatch(deps, events.slice(i, i + 97), null)

    const rows = await db.rows<Row>(sql`SELECT did, rkey, agent_uri, raw_system_hash,
      memfs_revision, compiled_us, evidence FROM prompts WHERE NOT deleted`)
    const byUri = new Map(rows.map((r) => [`at://${r.did}/${NSIDS.prompt}/${r.rkey}`, r]))
    const agents = await db.rows<{ did: string; rkey: string; template_hash: string | null }>(
      sql`SELECT did, rkey, template_hash FROM agents WHERE NOT deleted`,
    )
    const agentHash = new Map(
      agents.map((a) => [`at://${a.did}/${NSIDS.agent}/${a.rkey}`, a.template_hash]),
    )
    const seen = new Map<string, number>()
    const details = model.promptDetails()
    expect(details.length).toBeGreaterThan(100)
    for (const m of details) {
      const view = await getPromptView(db, NSIDS, m.did, m.rkey)
      expect(view, `${m.did}/${m.rkey}`).not.toBeNull()
      if (!view) continue
      const reasons = view.reasons as Record<string, string>
      expect(Object.keys(reasons).sort()).toEqual([...m.flags].sort())
      const self = byUri.get(view.uri)
      expect(self).toBeDefined()
      if (!self) continue
      for (const [flag, text] of Object.entries(reasons)) {
        seen.set(flag, (seen.get(flag) ?? 0) + 1)
        expect(text).not.toMatch(/ask again/)
        if (flag === 'orphaned' || flag === 'mismatched')
          expect(text).toContain(view.conversation.uri)
        if (flag === 'invalid') expect(text).toContain(view.validationError as string)
        if (flag === 'coreMemoryDetached') expect(text).toMatch(/first \d+ characters|first char/)
        if (flag === 'staleTemplate' && m.staleTemplateRule === 'agentHash') {
          expect(text).toContain(view.agent.uri as string)
          expect(text).toContain(agentHash.get(view.agent.uri as string) as string)
          expect(text).toContain(self.raw_system_hash as string)
        }
        if (
          (flag === 'staleTemplate' && m.staleTemplateRule === 'inferred') ||
          flag === 'staleMemory'
        ) {
          const named = [...text.matchAll(AT_URI)].map((x) => x[0])
          const newer = named.map((u) => byUri.get(u)).find((r) => r !== undefined)
          expect(newer, text).toBeDefined()
          if (!newer) continue
          expect(newer.did).toBe(self.did)
          expect(newer.agent_uri).toBe(self.agent_uri)
          expect(newer.evidence).toBe(true)
          expect(Number(newer.compiled_us)).toBeGreaterThan(Number(self.compiled_us))
          if (flag === 'staleMemory') expect(newer.memfs_revision).not.toBe(self.memfs_revision)
          else expect(newer.raw_system_hash).not.toBe(self.raw_system_hash)
        }
      }
    }
    // The traffic exercises every flag, and both staleTemplate rules.
    for (const flag of FLAG_NAMES) expect(seen.get(flag) ?? 0, flag).toBeGreaterThan(0)
    const rules = new Set(details.map((d) => d.staleTemplateRule).filter(Boolean))
    expect([...rules].sort()).toEqual(['agentHash', 'inferred'])
  }, 120_000)
})

describe('detachedReason', () => {
  it('says where coreMemory stops matching content', () => {
    const text = detachedReason('abc MEMORY one two three xyz', 'MEMORY one TWO')
    expect(text).toContain('first 11 characters match content at offset 4')
    expect(text).toContain('"TWO"')
    expect(text).toContain('"two three xyz"')
    expect(detachedReason('abc', 'zzz')).toContain('not contain even its first character, "zzz"')
  })
})
