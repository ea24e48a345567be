// State of the simulated network: just enough per repo and agent to make consistent
// updates (rev clocks, agent templates and memory repositories, which conversations are
// live), never the events.

import { createHash } from 'node:crypto'
import { type CompiledPrompt, compileSystemPrompt, sha256Hex } from './letta-compile.ts'
import type { GeneratorOptions } from './options.ts'
import type { Random } from './random.ts'
import {
  type FileSlot,
  memoryLayout,
  pickBodyLength,
  pickOffset,
  renderFiles,
  renderTemplate,
  type Slice,
  type TemplateStyle,
} from './text.ts'

export interface Agent {
  rkey: string
  uri: string
  created: boolean
  createdAt: string
  /** the agent record publishes `system` (else staleTemplate can only be inferred) */
  hasSystem: boolean
  /** Letta's own agent record (LocalAgentRecord) fields */
  letta: {
    id: string
    name: string
    description: string | null
    tags: string[]
    model: string
    modelSettings: Record<string, unknown>
  }
  style: TemplateStyle
  template: Slice
  /** the memory repository's files; null when the agent has no memfs */
  files: FileSlot[] | null
  /** the memory repository's HEAD (40 hex); null without memfs */
  memRev: string | null
  /** bytes of a compiled prompt outside the template and memory bodies */
  fixed: number
  /** the current `system` and its lowercase hex sha256 */
  system: string
  hash: string
}

export type ConversationState = 'pending' | 'live' | 'deleted'

/** One conversation slot: conversation and prompt share its rkey. */
export interface Slot {
  rkey: string
  agent: Agent
  conv: ConversationState
  prompt: boolean
  /** Letta's conversation id, named in every compile's metadata block */
  convId: string
  /** messages so far in the conversation (the metadata block counts them) */
  messages: number
  /** template hash and memory revision of the last compile, to name each recompile's kind */
  lastHash: string | null
  lastRev: string | null
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

function uuid(rand: Random): string {
  return `${rand.hex(8)}-${rand.hex(4)}-4${rand.hex(3)}-${rand.pick(['8', '9', 'a', 'b'])}${rand.hex(3)}-${rand.hex(12)}`
}

/** A conversation id as Letta makes them; fixed width, so prompt sizes hold. */
export function newConversationId(rand: Random): string {
  return `conv-${uuid(rand)}`
}

const TAGS = ['origin:letta-code', 'demo', 'support', 'personal', 'research']
// Integers and strings only: the AT data model has no floats (a temperature of 0.7 could
// not be published as it is).
const SETTINGS = [
  { provider_type: 'anthropic', max_output_tokens: 4096, parallel_tool_calls: false },
  { provider_type: 'openai', max_output_tokens: 8192, reasoning_effort: 'medium' },
  { provider_type: 'google_ai', max_output_tokens: 2048 },
]

function newAgent(rand: Random, o: GeneratorOptions): Agent {
  const name = `${rand.pick(NAMES)}-${rand.int(1, 99)}`
  const hasMemfs = !rand.chance(o.rates.agentWithoutMemfs)
  const a: Agent = {
    rkey: '',
    uri: '',
    created: false,
    createdAt: '',
    hasSystem: !rand.chance(o.rates.agentWithoutSystem),
    letta: {
      id: `agent-${uuid(rand)}`,
      name,
      description: rand.chance(0.6) ? `${name}, a companion that remembers` : null,
      tags: TAGS.filter(() => rand.chance(0.4)),
      model: rand.pick(MODELS),
      modelSettings: rand.pick(SETTINGS),
    },
    style: rand.chance(0.7) ? 'placeholder' : 'appended',
    template: { offset: 0, length: 2 },
    files: hasMemfs ? memoryLayout(rand.chance(0.5) ? 'memfs-v2' : 'memfs-v1') : null,
    memRev: hasMemfs ? rand.hex(40) : null,
    fixed: 0,
    system: '',
    hash: '',
  }
  a.fixed = measureFixed(a)
  return a
}

const bodies = (a: Agent): FileSlot[] => (a.files ?? []).filter((f) => f.fixed === null)
const bodyBytes = (files: FileSlot[]): number => files.reduce((n, f) => n + f.body.length, 0)

/**
 * Bytes of a compile outside the template and memory bodies: compiled once with two-char
 * bodies, the widest message count, and fixed-width ids and time.
 */
function measureFixed(a: Agent): number {
  const corpus = 'M.'
  const c = compileSystemPrompt({
    agentId: a.letta.id,
    system: renderTemplate(a.letta.name, a.style, corpus, a.template),
    conversationId: `conv-${'0'.repeat(36)}`,
    files: a.files ? renderFiles(corpus, a.files) : [],
    compiledAt: new Date(0),
    previousMessageCount: MAX_MESSAGES,
  })
  return Buffer.byteLength(c.content, 'utf8') - 2 * (1 + bodies(a).length)
}

/** The metadata block counts messages: capped so its width, and prompt sizes, hold. */
export const MAX_MESSAGES = 9999

/** Sizes a new agent's template and memory bodies so its prompts land in the range. */
export function sizeAgent(rand: Random, o: GeneratorOptions, corpus: string, a: Agent): void {
  const { min, max } = o.contentBytes
  const files = bodies(a)
  const total = rand.int(Math.min(min + 4, max), max)
  const room = Math.max(64 * (1 + files.length), total - a.fixed)
  const share = files.length === 0 ? 1 : 0.3 + 0.4 * rand.next()
  const template = Math.max(64, Math.floor(room * share))
  a.template = { length: template, offset: pickOffset(rand, corpus, template) }
  const each = Math.max(64, Math.floor((room - template) / Math.max(1, files.length)))
  for (const f of files) f.body = { length: each, offset: pickOffset(rand, corpus, each) }
  setSystem(corpus, a)
}

function setSystem(corpus: string, a: Agent): void {
  a.system = renderTemplate(a.letta.name, a.style, corpus, a.template)
  a.hash = sha256Hex(a.system)
}

/** A new template: only the template body moves, the memory stays as it is. */
export function changeTemplate(rand: Random, o: GeneratorOptions, corpus: string, a: Agent): void {
  const { min, max } = o.contentBytes
  const len = pickBodyLength(rand, a.fixed, bodyBytes(bodies(a)), min + 4, max)
  a.template = { length: len, offset: pickOffset(rand, corpus, len) }
  setSystem(corpus, a)
}

/** A memfs commit that changes one file; returns its path, or null without memfs. */
export function changeMemory(
  rand: Random,
  o: GeneratorOptions,
  corpus: string,
  a: Agent,
): string | null {
  const files = bodies(a)
  if (files.length === 0 || a.memRev === null) return null
  const { min, max } = o.contentBytes
  const f = rand.pick(files)
  const other = a.template.length + bodyBytes(files) - f.body.length
  const len = pickBodyLength(rand, a.fixed, other, min + 4, max)
  f.body = { length: len, offset: pickOffset(rand, corpus, len) }
  // A commit id: hash of the parent and the change, like git's (40 hex, never reused).
  const [file] = renderFiles(corpus, [f])
  a.memRev = createHash('sha1').update(`${a.memRev}\n${f.path}\n${file.raw}`).digest('hex')
  return f.path
}

/** The prompt the agent compiles now for slot `s` (Letta's algorithm). */
export function compileFor(corpus: string, a: Agent, s: Slot, compiledAt: Date): CompiledPrompt {
  return compileSystemPrompt({
    agentId: a.letta.id,
    system: a.system,
    conversationId: s.convId,
    files: a.files ? renderFiles(corpus, a.files) : [],
    ...(a.memRev === null ? {} : { memfsRevision: a.memRev }),
    compiledAt,
    previousMessageCount: s.messages,
  })
}

export function agentRecord(
  o: GeneratorOptions,
  a: Agent,
  updatedAt: string | null,
): Record<string, unknown> {
  const l = a.letta
  return {
    $type: o.agentNsid,
    id: l.id,
    name: l.name,
    ...(l.description === null ? {} : { description: l.description }),
    ...(a.hasSystem ? { system: a.system } : {}),
    tags: l.tags,
    model: l.model,
    model_settings: l.modelSettings,
    createdAt: a.createdAt,
    ...(updatedAt ? { updatedAt } : {}),
  }
}

/** Remembers a new slot, forgetting dead ones and then the oldest beyond the cap. */
export function remember(repo: Repo, slot: Slot, cap: number): void {
  repo.slots = repo.slots.filter((s) => s.conv !== 'deleted' || s.prompt)
  repo.slots.push(slot)
  if (repo.slots.length > cap) repo.slots.splice(0, repo.slots.length - cap)
}
