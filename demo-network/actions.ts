// What can happen next on the simulated network. Each action returns the one event it
// emits now (or null when it does not apply) and may schedule follow-ups for later steps.

import {
  type Agent,
  agentRecord,
  changeMemory,
  changeTemplate,
  compileFor,
  MAX_MESSAGES,
  newConversationId,
  newRepo,
  type Repo,
  remember,
  type Slot,
  sizeAgent,
} from './network.ts'
import type { ActionWeights, GeneratorOptions } from './options.ts'
import type { Random } from './random.ts'
import { buildPromptRecord } from './records.ts'
import { tidFromMicros } from './tid.ts'
import type { JetstreamEvent, JetstreamOperation } from './types.ts'

export type Emit = JetstreamEvent | null
export type Action = keyof ActionWeights

/** What the actions need from the generator: its state, clock, scheduler and emitters. */
export interface Sim {
  o: GeneratorOptions
  rand: Random
  corpus: string
  repos: Repo[]
  noise: Repo[]
  timeUs(): number
  nowIso(): string
  bump(name: string): void
  /** runs `run` after `delay` events, waiting while the repo is down, dropped if it is gone */
  later(delay: number, repo: Repo, run: () => Emit): void
  schedule(delay: number, run: () => Emit): void
  commit(
    repo: Repo,
    collection: string,
    op: JetstreamOperation,
    rkey: string,
    record?: Record<string, unknown>,
  ): JetstreamEvent
  account(repo: Repo, active: boolean, status?: string): JetstreamEvent
  identity(repo: Repo): JetstreamEvent
}

const NOISE_WEIGHTS = [
  ['post', 0.45],
  ['other', 0.2],
  ['account', 0.15],
  ['identity', 0.2],
] as const

type NoiseVariant = (typeof NOISE_WEIGHTS)[number][0]

/** Draws a noise variant by NOISE_WEIGHTS; the remainder of the unit interval is identity. */
function noiseVariant(rand: Random): NoiseVariant {
  let x = rand.next()
  for (const [name, w] of NOISE_WEIGHTS) {
    x -= w
    if (x < 0) return name
  }
  return 'identity'
}

const hasAgents = (r: Repo) => r.agents.some((a) => a.created)
const open = (s: Slot) => s.conv !== 'deleted'

/**
 * The actions of the simulated network over the generator's state (`sim`): one method per
 * weighted action (ActionWeights), plus `noise` for the rest of the network.
 */
export class Actions implements Record<Action, () => Emit> {
  readonly #sim: Sim

  constructor(sim: Sim) {
    this.#sim = sim
  }

  #rkeyTid(r: Repo): string {
    return tidFromMicros(this.#sim.timeUs(), r.rkeyClock)
  }

  #pickRepo(pred: (r: Repo) => boolean = () => true): Repo | null {
    for (let i = 0; i < 8; i++) {
      const r = this.#sim.rand.pick(this.#sim.repos)
      if (r.active && pred(r)) return r
    }
    return null
  }

  #pickAgent(r: Repo): Agent | null {
    const made = r.agents.filter((a) => a.created)
    return made.length ? this.#sim.rand.pick(made) : null
  }

  #pickSlot(r: Repo, pred: (s: Slot) => boolean): Slot | null {
    const found = r.slots.filter(pred)
    return found.length ? this.#sim.rand.pick(found) : null
  }

  #createAgent(r: Repo, a: Agent): Emit {
    const { o, rand, corpus } = this.#sim
    a.created = true
    a.rkey = this.#rkeyTid(r)
    a.uri = `at://${r.did}/${o.agentNsid}/${a.rkey}`
    a.createdAt = this.#sim.nowIso()
    sizeAgent(rand, o, corpus, a)
    if (!a.hasSystem) this.#sim.bump('agentWithoutSystem')
    return this.#sim.commit(r, o.agentNsid, 'create', a.rkey, agentRecord(o, a, null))
  }

  #writeConversation(r: Repo, s: Slot): Emit {
    const { o, rand } = this.#sim
    s.conv = 'live'
    const title = `Conversation with ${s.agent.letta.name} #${rand.int(1, 9999)}`
    const createdAt = this.#sim.nowIso()
    // Letta's conversation fields (StoredConversation) beside the atproto ones.
    const messageIds = Array.from({ length: rand.int(1, 4) }, () => `message-${rand.hex(8)}`)
    const record = {
      $type: o.conversationNsid,
      agent: s.agent.uri,
      id: s.convId,
      agent_id: s.agent.letta.id,
      in_context_message_ids: messageIds,
      ...(rand.chance(0.1) ? { hidden: true } : {}),
      ...(rand.chance(0.3) ? { tags: ['demo'] } : {}),
      title,
      createdAt,
    }
    return this.#sim.commit(r, o.conversationNsid, 'create', s.rkey, record)
  }

  /** Compiles the slot's prompt (a create, or an update when it exists) from its agent. */
  #compile(r: Repo, s: Slot): Emit {
    const { o, rand, corpus } = this.#sim
    const a = s.agent
    const compiledAtMs = Math.floor(this.#sim.timeUs() / 1000) - rand.int(0, 250)
    s.messages = Math.min(MAX_MESSAGES, s.messages + rand.int(1, 6))
    const c = compileFor(corpus, a, s, new Date(compiledAtMs))
    const draft = {
      did: r.did,
      rkey: s.rkey,
      agentUri: a.uri,
      content: c.content,
      coreMemory: c.coreMemory,
      hash: c.rawSystemHash,
      memfsRevision: c.memfsRevision ?? null,
      compiledAtMs,
    }
    const { record, tags } = buildPromptRecord(draft, this.#recordInput(r, s))
    for (const tag of tags) this.#sim.bump(tag)
    if (s.prompt) this.#bumpRecompile(s)
    s.lastHash = a.hash
    s.lastRev = a.memRev
    const op = s.prompt ? 'update' : 'create'
    s.prompt = true
    return this.#sim.commit(r, o.promptNsid, op, s.rkey, record)
  }

  /** Counts a recompile, and its kind by what moved since the slot's last compile. */
  #bumpRecompile(s: Slot): void {
    this.#sim.bump('recompile')
    const a = s.agent
    if (s.lastHash !== a.hash) this.#sim.bump('recompile:template')
    if (s.lastRev !== a.memRev) this.#sim.bump('recompile:memory')
    if (s.lastHash === a.hash && s.lastRev === a.memRev) this.#sim.bump('recompile:metadata')
  }

  /** What buildPromptRecord draws its anomalies with, for slot `s` of repo `r`. */
  #recordInput(r: Repo, s: Slot): Parameters<typeof buildPromptRecord>[1] {
    const { o, rand, corpus, repos } = this.#sim
    const a = s.agent
    return {
      rand,
      rates: o.rates,
      invalidKinds: o.invalidKinds,
      promptNsid: o.promptNsid,
      conversationNsid: o.conversationNsid,
      otherDid: () => rand.pick([...repos, ...this.#sim.noise].filter((x) => x !== r)).did,
      otherRkey: () =>
        this.#pickSlot(r, (x) => x !== s)?.rkey ??
        tidFromMicros(this.#sim.timeUs() - 1, r.rkeyClock),
      detachedMemory: () => {
        // Letta's mid-conversation memory update: a later compile's core memory (one more
        // message, and a memory file edited when there is memfs) that content lacks.
        const later: Agent = { ...a, files: a.files?.map((f) => ({ ...f })) ?? null }
        changeMemory(rand, o, corpus, later)
        const at = new Date(Math.floor(this.#sim.timeUs() / 1000))
        return compileFor(corpus, later, { ...s, messages: s.messages + 1 }, at).coreMemory
      },
    }
  }

  #recompileAgent(r: Repo, a: Agent): Emit {
    const s = this.#pickSlot(r, (x) => x.agent === a && open(x))
    return s ? this.#compile(r, s) : null
  }

  #deletePrompt(r: Repo, s: Slot): Emit {
    s.prompt = false
    this.#sim.bump('promptDelete')
    return this.#sim.commit(r, this.#sim.o.promptNsid, 'delete', s.rkey)
  }

  newConversation(): Emit {
    const { o, rand } = this.#sim
    const r = this.#pickRepo()
    if (!r) return null
    const a = rand.pick(r.agents)
    if (!a.created) return this.#createAgent(r, a)
    const nonTid = rand.chance(o.rates.nonTidRkey)
    if (nonTid) this.#sim.bump('nonTidRkey')
    // 13 characters like a TID, so the prompt's size accounting holds.
    const rkey = nonTid ? `conv-${rand.int(10_000_000, 99_999_999)}` : this.#rkeyTid(r)
    const s: Slot = {
      rkey,
      agent: a,
      conv: 'pending',
      prompt: false,
      convId: newConversationId(rand),
      messages: 0,
      lastHash: null,
      lastRev: null,
    }
    remember(r, s, o.maxSlotsPerDid)
    if (rand.chance(o.rates.sidecarFirst)) {
      this.#sim.bump('sidecarFirst')
      const sidecar = () => (s.conv === 'pending' ? this.#writeConversation(r, s) : null)
      this.#sim.later(rand.int(2, 30), r, sidecar)
      return this.#compile(r, s)
    }
    this.#sim.later(rand.int(1, 4), r, () => (s.prompt ? null : this.#compile(r, s)))
    return this.#writeConversation(r, s)
  }

  recompile(): Emit {
    const r = this.#pickRepo()
    const s = r && this.#pickSlot(r, open)
    return r && s ? this.#compile(r, s) : this.newConversation()
  }

  templateChange(): Emit {
    const { o, rand, corpus } = this.#sim
    const r = this.#pickRepo(hasAgents)
    const a = r && this.#pickAgent(r)
    if (!r || !a) return null
    changeTemplate(rand, o, corpus, a)
    this.#sim.bump(a.hasSystem ? 'templateChange' : 'templateChange:noSystem')
    this.#sim.later(rand.int(1, 10), r, () => this.#recompileAgent(r, a))
    const record = agentRecord(o, a, this.#sim.nowIso())
    return this.#sim.commit(r, o.agentNsid, 'update', a.rkey, record)
  }

  memfsBump(): Emit {
    const { o, rand, corpus } = this.#sim
    const r = this.#pickRepo(hasAgents)
    const a = r && this.#pickAgent(r)
    if (!r || !a) return null
    changeMemory(rand, o, corpus, a)
    this.#sim.bump('memfsBump')
    if (rand.chance(0.5)) this.#sim.later(rand.int(1, 20), r, () => this.#recompileAgent(r, a))
    // memfs is not on the network: a bump shows only through the compiles after it.
    return this.#recompileAgent(r, a)
  }

  conversationDelete(): Emit {
    const { o, rand } = this.#sim
    const r = this.#pickRepo()
    const s = r && this.#pickSlot(r, (x) => x.conv === 'live')
    if (!r || !s) return null
    s.conv = 'deleted'
    this.#sim.bump('conversationDelete')
    if (rand.chance(o.rates.promptCleanup)) {
      this.#sim.later(rand.int(1, 6), r, () => (s.prompt ? this.#deletePrompt(r, s) : null))
    }
    return this.#sim.commit(r, o.conversationNsid, 'delete', s.rkey)
  }

  promptDelete(): Emit {
    const r = this.#pickRepo()
    const s = r && this.#pickSlot(r, (x) => x.prompt)
    return r && s ? this.#deletePrompt(r, s) : null
  }

  takedown(): Emit {
    const { o, rand } = this.#sim
    const r = this.#pickRepo(hasAgents)
    if (!r) return null
    const status = rand.pick(['takendown', 'suspended', 'deactivated'])
    r.active = false
    r.reactivating = rand.chance(o.rates.reactivate)
    this.#sim.bump(`takedown:${status}`)
    if (r.reactivating) this.#sim.schedule(rand.int(30, 400), () => this.#reactivate(r))
    return this.#sim.account(r, false, status)
  }

  #reactivate(r: Repo): Emit {
    if (r.purged) return null
    r.active = true
    r.reactivating = false
    this.#sim.bump('reactivation')
    return this.#sim.account(r, true)
  }

  purge(): Emit {
    const { o, rand, repos } = this.#sim
    const r = this.#pickRepo(hasAgents)
    if (!r) return null
    r.purged = true
    r.active = false
    repos[repos.indexOf(r)] = newRepo(rand, o)
    this.#sim.bump('purge')
    return this.#sim.account(r, false, 'deleted')
  }

  identity(): Emit {
    this.#sim.bump('identity')
    return this.#sim.identity(this.#sim.rand.pick(this.#sim.repos))
  }

  /** An event of the rest of the network: a post, another collection, account or identity. */
  noise(): Emit {
    const { rand, corpus } = this.#sim
    const variant = noiseVariant(rand)
    const n = rand.pick(this.#sim.noise)
    this.#sim.bump(`noise:${variant}`)
    if (variant === 'post') {
      const r = rand.chance(0.5) ? n : (this.#pickRepo() ?? n)
      const at = rand.int(0, 9000)
      const text = corpus.slice(at, at + rand.int(20, 280))
      const createdAt = this.#sim.nowIso()
      const record = { $type: 'app.bsky.feed.post', text, langs: ['en'], createdAt }
      return this.#sim.commit(r, 'app.bsky.feed.post', 'create', this.#rkeyTid(r), record)
    }
    if (variant === 'other') {
      const r = this.#pickRepo() ?? n
      const $type = 'xyz.quasigod.lab.letta.other'
      const record = { $type, note: 'not an indexed collection', createdAt: this.#sim.nowIso() }
      return this.#sim.commit(r, $type, 'create', this.#rkeyTid(r), record)
    }
    if (variant === 'account') {
      n.active = !n.active
      return this.#sim.account(n, n.active, n.active ? undefined : 'deactivated')
    }
    return this.#sim.identity(n)
  }
}
