// State of the simulated network: just enough per repo and agent to make consistent
// updates (rev clocks, agent templates, which conversations are live), never the events.

import { createHash } from 'node:crypto'
import type { GeneratorOptions } from './options.ts'
import type { Random } from './random.ts'
import { fixedBytes, pickBodyLength, pickOffset, renderTemplate, type TextLayout } from './text.ts'

export interface Agent {
  rkey: string
  uri: string
  created: boolean
  createdAt: string
  hasSystem: boolean
  hasMemfs: boolean
  model: string
  layout: TextLayout
  /** bytes of a prompt outside the two bodies, for this agent's name */
  fixed: number
  /** lowercase hex sha256 of the current template */
  hash: string
  memRev: string | null
  memNonce: string
}

export type ConversationState = 'pending' | 'live' | 'deleted'

/** One conversation slot: conversation and prompt share its rkey. */
export interface Slot {
  rkey: string
  agent: Agent
  conv: ConversationState
  prompt: boolean
}

export interface Repo {
  did: string
  handle: string
  revClock: number
  rkeyClock: number
  agents: Agent[]
  slots: Slot[]
  active: boolean
  /** a pending reactivation exists, so scheduled work should wait rather than be dropped */
  reactivating: boolean
  purged: boolean
}

const NAMES = ['Ada', 'Basil', 'Cleo', 'Dmitri', 'Esme', 'Farid', 'Greta', 'Hiro', 'Ines', 'Juno']
const MODELS = ['anthropic/claude-sonnet-4-5', 'openai/gpt-4.1', 'google/gemini-2.5-pro']

export function newHandle(rand: Random): string {
  return `${rand.pick(NAMES).toLowerCase()}-${rand.base32(6)}.example.com`
}

export function newDid(rand: Random): string {
  return `did:plc:${rand.base32(24)}`
}

export function newRepo(rand: Random, o: GeneratorOptions): Repo {
  const repo: Repo = {
    did: newDid(rand),
    handle: newHandle(rand),
    revClock: rand.int(0, 1023),
    rkeyClock: rand.int(0, 1023),
    agents: [],
    slots: [],
    active: true,
    reactivating: false,
    purged: false,
  }
  const n = rand.int(o.agentsPerDid.min, o.agentsPerDid.max)
  for (let i = 0; i < n; i++) repo.agents.push(newAgent(rand, o))
  return repo
}

function newAgent(rand: Random, o: GeneratorOptions): Agent {
  const name = `${rand.pick(NAMES)}-${rand.int(1, 99)}`
  const fixed = fixedBytes(name)
  const total = rand.int(o.contentBytes.min, o.contentBytes.max)
  const templateLength = Math.max(64, Math.floor((total - fixed) * (0.3 + 0.4 * rand.next())))
  const layout: TextLayout = {
    name,
    templateOffset: 0,
    templateLength,
    memoryOffset: 0,
    memoryLength: Math.max(64, total - fixed - templateLength),
  }
  const hasMemfs = !rand.chance(o.rates.agentWithoutMemfs)
  return {
    rkey: '',
    uri: '',
    created: false,
    createdAt: '',
    hasSystem: !rand.chance(o.rates.agentWithoutSystem),
    hasMemfs,
    model: rand.pick(MODELS),
    layout,
    fixed,
    hash: '',
    memRev: hasMemfs ? rand.hex(40) : null,
    memNonce: rand.hex(8),
  }
}

/** A new template: only the template body moves, the memory stays as it is. */
export function changeTemplate(rand: Random, o: GeneratorOptions, corpus: string, a: Agent): void {
  const { min, max } = o.contentBytes
  const len = pickBodyLength(rand, a.fixed, a.layout.memoryLength, min, max)
  a.layout.templateLength = len
  a.layout.templateOffset = pickOffset(rand, corpus, len)
  a.hash = sha256Hex(renderTemplate(corpus, a.layout))
}

/** A memfs commit: new memory text (and revision when the agent has memfs). */
export function changeMemory(rand: Random, o: GeneratorOptions, corpus: string, a: Agent): void {
  const { min, max } = o.contentBytes
  const len = pickBodyLength(rand, a.fixed, a.layout.templateLength, min, max)
  a.layout.memoryLength = len
  a.layout.memoryOffset = pickOffset(rand, corpus, len)
  a.memRev = a.hasMemfs ? rand.hex(40) : null
  a.memNonce = rand.hex(8)
}

export function agentRecord(
  o: GeneratorOptions,
  corpus: string,
  a: Agent,
  updatedAt: string | null,
): Record<string, unknown> {
  return {
    $type: o.agentNsid,
    name: a.layout.name,
    model: a.model,
    ...(a.hasSystem ? { system: renderTemplate(corpus, a.layout) } : {}),
    createdAt: a.createdAt,
    ...(updatedAt ? { updatedAt } : {}),
  }
}

export function sha256Hex(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex')
}

/** Remembers a new slot, forgetting dead ones and then the oldest beyond the cap. */
export function remember(repo: Repo, slot: Slot, cap: number): void {
  repo.slots = repo.slots.filter((s) => s.conv !== 'deleted' || s.prompt)
  repo.slots.push(slot)
  if (repo.slots.length > cap) repo.slots.splice(0, repo.slots.length - cap)
}
