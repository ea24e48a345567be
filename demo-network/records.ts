// Builds compiledPrompt records and applies the deliberate defects the demo network needs.
// Each defect is drawn independently, so combinations (invalid and mismatched, ...) occur.

import type { AnomalyRates, InvalidKind } from './options.ts'
import type { Random } from './random.ts'
import { isoFromMs } from './tid.ts'

export interface PromptDraft {
  did: string
  rkey: string
  agentUri: string
  content: string
  coreMemory: string
  /** lowercase hex sha256 of the agent's template at compile time */
  hash: string
  memfsRevision: string | null
  compiledAtMs: number
}

export interface DefectContext {
  rand: Random
  rates: AnomalyRates
  invalidKinds: readonly InvalidKind[]
  promptNsid: string
  conversationNsid: string
  /** another DID of the network, for cross-repo mismatches */
  otherDid: () => string
  /** another rkey of the same repo */
  otherRkey: () => string
  /** a fresh memory render of the same agent that `content` does not contain */
  detachedMemory: () => string
}

const MAX_BYTES = 200_000
const OFFSETS = ['+05:30', '-08:00', '+09:00', '+01:00', '-03:00']

function withOffset(ms: number, offset: string): string {
  const sign = offset[0] === '-' ? -1 : 1
  const minutes = sign * (Number(offset.slice(1, 3)) * 60 + Number(offset.slice(4, 6)))
  return isoFromMs(ms + minutes * 60_000).slice(0, 23) + offset
}

export function buildPromptRecord(
  d: PromptDraft,
  ctx: DefectContext,
): { record: Record<string, unknown>; tags: string[] } {
  const { rand, rates } = ctx
  const tags: string[] = []
  // Drawn in a fixed order, so a seed gives the same network every time.
  const { compiledAtMs, compiledAt } = drawCompiledAt(d.compiledAtMs, ctx, tags)
  const rawSystemHash = drawSystemHash(d.hash, ctx, tags)
  const conversation = drawConversation(d, ctx, tags)
  let coreMemory = d.coreMemory
  if (rand.chance(rates.coreMemoryDetached)) {
    coreMemory = ctx.detachedMemory()
    tags.push('coreMemoryDetached')
  }
  const record: Record<string, unknown> = {
    $type: ctx.promptNsid,
    agent: d.agentUri,
    conversation,
    content: d.content,
    coreMemory,
    rawSystemHash,
    ...(d.memfsRevision === null ? {} : { memfsRevision: d.memfsRevision }),
    compiledAt,
  }
  if (ctx.invalidKinds.length > 0 && rand.chance(rates.invalid)) {
    const kind = rand.pick(ctx.invalidKinds)
    tags.push(`invalid:${kind}`)
    breakRecord(record, kind, ctx.rand, compiledAtMs)
  }
  return { record, tags }
}

/** A compile time in the future, or written with a UTC offset instead of Z. */
function drawCompiledAt(
  draftMs: number,
  { rand, rates }: DefectContext,
  tags: string[],
): { compiledAtMs: number; compiledAt: string } {
  let compiledAtMs = draftMs
  if (rand.chance(rates.futureCompiledAt)) {
    compiledAtMs += rand.int(10 * 60_000, 2 * 3_600_000)
    tags.push('futureCompiledAt')
  }
  let compiledAt = isoFromMs(compiledAtMs)
  if (rand.chance(rates.offsetCompiledAt)) {
    compiledAt = withOffset(compiledAtMs, rand.pick(OFFSETS))
    tags.push('offsetCompiledAt')
  }
  return { compiledAtMs, compiledAt }
}

/** The template hash as clients spell it: upper case, `sha256:`-prefixed, or both. */
function drawSystemHash(hash: string, { rand, rates }: DefectContext, tags: string[]): string {
  if (!rand.chance(rates.hashVariant)) return hash
  const v = rand.pick(['prefix', 'upper', 'prefixUpper'] as const)
  let raw = hash
  if (v !== 'prefix') raw = raw.toUpperCase()
  if (v !== 'upper') raw = (v === 'prefixUpper' ? 'SHA256:' : 'sha256:') + raw
  tags.push(`hashVariant:${v}`)
  return raw
}

/** The conversation the prompt names; mismatched in rkey, collection or repo. */
function drawConversation(d: PromptDraft, ctx: DefectContext, tags: string[]): string {
  const { rand, rates } = ctx
  if (!rand.chance(rates.mismatched)) return `at://${d.did}/${ctx.conversationNsid}/${d.rkey}`
  const v = rand.pick(['rkey', 'collection', 'did'] as const)
  tags.push(`mismatched:${v}`)
  if (v === 'rkey') return `at://${d.did}/${ctx.conversationNsid}/${ctx.otherRkey()}`
  if (v === 'collection') {
    const coll = rand.pick(['app.bsky.feed.post', 'xyz.quasigod.lab.letta.thread'])
    return `at://${d.did}/${coll}/${d.rkey}`
  }
  return `at://${ctx.otherDid()}/${ctx.conversationNsid}/${d.rkey}`
}

function breakRecord(
  record: Record<string, unknown>,
  kind: InvalidKind,
  rand: Random,
  compiledAtMs: number,
): void {
  switch (kind) {
    case 'missingField':
      // An older client that predates the field.
      delete record[rand.pick(['rawSystemHash', 'compiledAt'])]
      return
    case 'wrongType':
      // A strongRef where the lexicon wants a plain at-uri string.
      record.agent = {
        uri: record.agent,
        cid: 'bafyreigbtj4x7ip5legnfznufuopl4sg4knzc2cof6duas4b3q2fy6swua',
      }
      return
    case 'naiveDatetime':
      record.compiledAt = isoFromMs(compiledAtMs).slice(0, 23)
      return
    case 'badAtUri':
      record.agent = `letta://agents/agent-${rand.hex(8)}-${rand.hex(4)}-${rand.hex(12)}`
      return
    case 'overLimit': {
      // Two-byte characters: over the byte limit while under 200000 UTF-16 units.
      const content = String(record.content)
      const n = Math.ceil((MAX_BYTES + 1 - Buffer.byteLength(content, 'utf8')) / 2)
      record.content = content + '\n' + 'é'.repeat(Math.max(1, n))
      return
    }
  }
}
