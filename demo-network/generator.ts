// Deterministic simulated Letta network as Jetstream v1 events (SPEC section 5), for the
// `demo` command, benchmarks, examples and cross-checks against the reference model.
// It streams: only per-repo state is kept, so memory does not grow with the event count.

import { type Action, createActions, type Emit, type Sim } from './actions.ts'
import { fakeCid, realCid } from './cid.ts'
import { newHandle, newRepo, type Repo } from './network.ts'
import { type GeneratorInput, type GeneratorOptions, resolveOptions } from './options.ts'
import { createRandom } from './random.ts'
import { createCorpus } from './text.ts'
import { isoFromMs, tidFromMicros } from './tid.ts'
import type { GeneratorStats, JetstreamCommitEvent, JetstreamEvent } from './types.ts'

export type { GeneratorInput, GeneratorOptions } from './options.ts'
export type * from './types.ts'

export interface DemoGenerator extends Iterable<JetstreamEvent> {
  readonly options: GeneratorOptions
  /** The next event; the stream never ends. */
  next(): JetstreamEvent
  generate(n: number): JetstreamEvent[]
  /** A copy of the counters so far. */
  stats(): GeneratorStats
}

interface Pending {
  due: number
  run: () => Emit
}

// Upstream seqs of account / identity events start at a realistic magnitude.
const SEQ_BASE = 1_409_753_000

export function createGenerator(input: GeneratorInput = {}): DemoGenerator {
  const o = resolveOptions(input)
  const rand = createRandom(o.seed)
  const corpus = createCorpus(rand, Math.max(262_144, 2 * o.contentBytes.max))
  const repos: Repo[] = Array.from({ length: o.dids }, () => newRepo(rand, o))
  const noiseRepos = Array.from({ length: o.noiseDids }, () => ({
    ...newRepo(rand, o),
    agents: [],
  }))
  const pending: Pending[] = []
  const weights = Object.entries(o.weights) as Array<[Action, number]>
  const weightSum = weights.reduce((s, [, w]) => s + w, 0)
  let timeUs = o.startTimeUs
  let seq = SEQ_BASE
  let step = 0
  const stats: GeneratorStats = {
    events: 0,
    byKind: { commit: 0, account: 0, identity: 0 },
    commits: {},
    anomalies: {},
  }
  const nowIso = () => isoFromMs(Math.floor(timeUs / 1000))

  const schedule = (delay: number, run: () => Emit) => {
    const item = { due: step + delay, run }
    let i = pending.length
    while (i > 0 && pending[i - 1].due > item.due) i--
    pending.splice(i, 0, item)
  }

  const sim: Sim = {
    o,
    rand,
    corpus,
    repos,
    noise: noiseRepos,
    timeUs: () => timeUs,
    nowIso,
    bump: (name) => {
      stats.anomalies[name] = (stats.anomalies[name] ?? 0) + 1
    },
    schedule,
    later: (delay, repo, run) => {
      const guarded = (): Emit => {
        if (repo.purged || (!repo.active && !repo.reactivating)) return null
        if (!repo.active) {
          schedule(rand.int(20, 80), guarded)
          return null
        }
        return run()
      }
      schedule(delay, guarded)
    },
    commit: (repo, collection, operation, rkey, record) => {
      const rev = tidFromMicros(timeUs, repo.revClock)
      const c: JetstreamCommitEvent['commit'] = { rev, operation, collection, rkey }
      if (record) {
        c.record = record
        // rev is unique per repo, so the cheap CID still changes whenever the record does.
        c.cid = o.realCids ? realCid(record) : fakeCid(`${repo.did}/${collection}/${rkey}/${rev}`)
      }
      return { did: repo.did, time_us: timeUs, kind: 'commit', commit: c }
    },
    account: (repo, active, status) => ({
      did: repo.did,
      time_us: timeUs,
      kind: 'account',
      account: { active, did: repo.did, seq: ++seq, ...(status ? { status } : {}), time: nowIso() },
    }),
    identity: (repo) => {
      repo.handle = newHandle(rand)
      const identity = { did: repo.did, handle: repo.handle, seq: ++seq, time: nowIso() }
      return { did: repo.did, time_us: timeUs, kind: 'identity', identity }
    },
  }
  const actions = createActions(sim)

  const randomAction = (): Emit => {
    if (rand.chance(o.noiseRatio)) return actions.noise()
    let x = rand.next() * weightSum
    for (const [name, w] of weights) {
      x -= w
      if (x < 0) return actions.run[name]()
    }
    return actions.run.newConversation()
  }

  const next = (): JetstreamEvent => {
    for (;;) {
      // A gap per attempt, even a fruitless one, keeps time_us strictly increasing.
      timeUs += 1 + Math.floor(rand.next() * 2 * o.meanIntervalUs)
      const ev = pending.length && pending[0].due <= step ? pending.shift()!.run() : randomAction()
      if (!ev) continue
      step++
      stats.events++
      stats.byKind[ev.kind]++
      if (ev.kind === 'commit') {
        const key = `${ev.commit.collection}:${ev.commit.operation}`
        stats.commits[key] = (stats.commits[key] ?? 0) + 1
      }
      return ev
    }
  }

  return {
    options: o,
    next,
    generate: (n) => Array.from({ length: n }, next),
    stats: () => structuredClone(stats),
    *[Symbol.iterator]() {
      for (;;) yield next()
    },
  }
}
