// What can happen next on the simulated network. Each action returns the one event it
// emits now (or null when it does not apply) and may schedule follow-ups for later steps.

import {
  type Agent,
  agentRecord,
  changeMemory,
  changeTemplate,
  newRepo,
  type Repo,
  remember,
  type Slot,
} from './network.ts'
import type { ActionWeights, GeneratorOptions } from './options.ts'
import type { Random } from './random.ts'
import { buildPromptRecord } from './records.ts'
import { footer, renderContent, renderMemory, renderTemplate } from './text.ts'
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

export function createActions(sim: Sim): { run: Record<Action, () => Emit>; noise: () => Emit } {
  const { o, rand, corpus, repos, bump } = sim
  const now = () => sim.timeUs()
  const rkeyTid = (r: Repo) => tidFromMicros(now(), r.rkeyClock)

  const pickRepo = (pred: (r: Repo) => boolean = () => true): Repo | null => {
    for (let i = 0; i < 8; i++) {
      const r = rand.pick(repos)
      if (r.active && pred(r)) return r
    }
    return null
  }
  const hasAgents = (r: Repo) => r.agents.some((a) => a.created)
  const pickAgent = (r: Repo): Agent | null => {
    const made = r.agents.filter((a) => a.created)
    return made.length ? rand.pick(made) : null
  }
  const pickSlot = (r: Repo, pred: (s: Slot) => boolean): Slot | null => {
    const found = r.slots.filter(pred)
    return found.length ? rand.pick(found) : null
  }
  const open = (s: Slot) => s.conv !== 'deleted'

  const createAgent = (r: Repo, a: Agent): Emit => {
    a.created = true
    a.rkey = rkeyTid(r)
    a.uri = `at://${r.did}/${o.agentNsid}/${a.rkey}`
    a.createdAt = sim.nowIso()
    changeTemplate(rand, o, corpus, a)
    changeMemory(rand, o, corpus, a)
    if (!a.hasSystem) bump('agentWithoutSystem')
    return sim.commit(r, o.agentNsid, 'create', a.rkey, agentRecord(o, corpus, a, null))
  }

  const writeConversation = (r: Repo, s: Slot): Emit => {
    s.conv = 'live'
    const title = `Conversation with ${s.agent.layout.name} #${rand.int(1, 9999)}`
    const record = { $type: o.conversationNsid, agent: s.agent.uri, title, createdAt: sim.nowIso() }
    return sim.commit(r, o.conversationNsid, 'create', s.rkey, record)
  }

  const compile = (r: Repo, s: Slot): Emit => {
    const a = s.agent
    const { memoryOffset, memoryLength } = a.layout
    const mem = renderMemory(corpus, a.memRev, a.memNonce, memoryOffset, memoryLength)
    const compiledAtMs = Math.floor(now() / 1000) - rand.int(0, 250)
    const foot = footer(compiledAtMs, s.rkey)
    const content = renderContent(renderTemplate(corpus, a.layout), mem, foot)
    const draft = {
      did: r.did,
      rkey: s.rkey,
      agentUri: a.uri,
      content,
      coreMemory: mem,
      hash: a.hash,
      memfsRevision: a.memRev,
      compiledAtMs,
    }
    const { record, tags } = buildPromptRecord(draft, {
      rand,
      rates: o.rates,
      invalidKinds: o.invalidKinds,
      promptNsid: o.promptNsid,
      conversationNsid: o.conversationNsid,
      otherDid: () => rand.pick([...repos, ...sim.noise].filter((x) => x !== r)).did,
      otherRkey: () => pickSlot(r, (x) => x !== s)?.rkey ?? tidFromMicros(now() - 1, r.rkeyClock),
      detachedMemory: () => {
        // A later memory update: another render (nonce) of the same size, so sizes hold.
        const nonce = ((Number.parseInt(a.memNonce, 16) + 1) >>> 0).toString(16).padStart(8, '0')
        return renderMemory(corpus, a.memRev, nonce, rand.int(0, 999), memoryLength)
      },
    })
    tags.forEach(bump)
    if (s.prompt) bump('recompile')
    const op = s.prompt ? 'update' : 'create'
    s.prompt = true
    return sim.commit(r, o.promptNsid, op, s.rkey, record)
  }

  const recompileAgent = (r: Repo, a: Agent): Emit => {
    const s = pickSlot(r, (x) => x.agent === a && open(x))
    return s ? compile(r, s) : null
  }

  const deletePrompt = (r: Repo, s: Slot): Emit => {
    s.prompt = false
    bump('promptDelete')
    return sim.commit(r, o.promptNsid, 'delete', s.rkey)
  }

  const run: Record<Action, () => Emit> = {
    newConversation: () => {
      const r = pickRepo()
      if (!r) return null
      const a = rand.pick(r.agents)
      if (!a.created) return createAgent(r, a)
      const nonTid = rand.chance(o.rates.nonTidRkey)
      if (nonTid) bump('nonTidRkey')
      // 13 characters like a TID, so the prompt's size accounting holds.
      const rkey = nonTid ? `conv-${rand.int(10_000_000, 99_999_999)}` : rkeyTid(r)
      const s: Slot = { rkey, agent: a, conv: 'pending', prompt: false }
      remember(r, s, o.maxSlotsPerDid)
      if (rand.chance(o.rates.sidecarFirst)) {
        bump('sidecarFirst')
        sim.later(rand.int(2, 30), r, () => (s.conv === 'pending' ? writeConversation(r, s) : null))
        return compile(r, s)
      }
      sim.later(rand.int(1, 4), r, () => (s.prompt ? null : compile(r, s)))
      return writeConversation(r, s)
    },
    recompile: () => {
      const r = pickRepo()
      const s = r && pickSlot(r, open)
      return r && s ? compile(r, s) : run.newConversation()
    },
    templateChange: () => {
      const r = pickRepo(hasAgents)
      const a = r && pickAgent(r)
      if (!r || !a) return null
      changeTemplate(rand, o, corpus, a)
      bump(a.hasSystem ? 'templateChange' : 'templateChange:noSystem')
      sim.later(rand.int(1, 10), r, () => recompileAgent(r, a))
      return sim.commit(r, o.agentNsid, 'update', a.rkey, agentRecord(o, corpus, a, sim.nowIso()))
    },
    memfsBump: () => {
      const r = pickRepo(hasAgents)
      const a = r && pickAgent(r)
      if (!r || !a) return null
      changeMemory(rand, o, corpus, a)
      bump('memfsBump')
      if (rand.chance(0.5)) sim.later(rand.int(1, 20), r, () => recompileAgent(r, a))
      // memfs is not on the network: a bump shows only through the compiles after it.
      return recompileAgent(r, a)
    },
    conversationDelete: () => {
      const r = pickRepo()
      const s = r && pickSlot(r, (x) => x.conv === 'live')
      if (!r || !s) return null
      s.conv = 'deleted'
      bump('conversationDelete')
      if (rand.chance(o.rates.promptCleanup)) {
        sim.later(rand.int(1, 6), r, () => (s.prompt ? deletePrompt(r, s) : null))
      }
      return sim.commit(r, o.conversationNsid, 'delete', s.rkey)
    },
    promptDelete: () => {
      const r = pickRepo()
      const s = r && pickSlot(r, (x) => x.prompt)
      return r && s ? deletePrompt(r, s) : null
    },
    takedown: () => {
      const r = pickRepo(hasAgents)
      if (!r) return null
      const status = rand.pick(['takendown', 'suspended', 'deactivated'])
      r.active = false
      r.reactivating = rand.chance(o.rates.reactivate)
      bump(`takedown:${status}`)
      if (r.reactivating) {
        sim.schedule(rand.int(30, 400), () => {
          if (r.purged) return null
          r.active = true
          r.reactivating = false
          bump('reactivation')
          return sim.account(r, true)
        })
      }
      return sim.account(r, false, status)
    },
    purge: () => {
      const r = pickRepo(hasAgents)
      if (!r) return null
      r.purged = true
      r.active = false
      repos[repos.indexOf(r)] = newRepo(rand, o)
      bump('purge')
      return sim.account(r, false, 'deleted')
    },
    identity: () => {
      bump('identity')
      return sim.identity(rand.pick(repos))
    },
  }

  const noise = (): Emit => {
    const variant = noiseVariant(rand)
    const n = rand.pick(sim.noise)
    bump(`noise:${variant}`)
    if (variant === 'post') {
      const r = rand.chance(0.5) ? n : (pickRepo() ?? n)
      const at = rand.int(0, 9000)
      const text = corpus.slice(at, at + rand.int(20, 280))
      const record = { $type: 'app.bsky.feed.post', text, langs: ['en'], createdAt: sim.nowIso() }
      return sim.commit(r, 'app.bsky.feed.post', 'create', rkeyTid(r), record)
    }
    if (variant === 'other') {
      const r = pickRepo() ?? n
      const $type = 'xyz.quasigod.lab.letta.other'
      const record = { $type, note: 'not an indexed collection', createdAt: sim.nowIso() }
      return sim.commit(r, $type, 'create', rkeyTid(r), record)
    }
    if (variant === 'account') {
      n.active = !n.active
      return sim.account(n, n.active, n.active ? undefined : 'deactivated')
    }
    return sim.identity(n)
  }

  return { run, noise }
}
