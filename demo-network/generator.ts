// Deterministic simulated Letta network as Jetstream v1 events (SPEC section 5), for the
// `demo` command, benchmarks, examples and cross-checks against the reference model.
// It streams: only per-repo state is kept, so memory does not grow with the event count.

import { type Action, Actions, type Emit, type Sim } from './actions.ts'
import { fakeCid, realCid } from './cid.ts'
import { newHandle, newRepo, type Repo } from './network.ts'
import { type GeneratorInput, type GeneratorOptions, resolveOptions } from './options.ts'
import { createRandom, type Random } from './random.ts'
import { createCorpus } from './text.ts'
import { isoFromMs, tidFromMicros } from './tid.ts'
import type {
  GeneratorStats,
  JetstreamCommitEvent,
  JetstreamEvent,
  JetstreamOperation,
} from './types.ts'

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
  return new Generator(new Simulation(resolveOptions(input)))
}

/** The network's state, clock and scheduler, and the events it emits: what Actions act on. */
class Simulation implements Sim {
  readonly o: GeneratorOptions
  readonly rand: Random
  readonly corpus: string
  readonly repos: Repo[]
  readonly noise: Repo[]
  readonly stats: GeneratorStats = {
    events: 0,
    byKind: { commit: 0, account: 0, identity: 0 },
    commits: {},
    anomalies: {},
  }
  #timeUs: number
  #seq = SEQ_BASE
  #step = 0
  readonly #pending: Pending[] = []

  constructor(o: GeneratorOptions) {
    this.o = o
    this.rand = createRandom(o.seed)
    this.corpus = createCorpus(this.rand, Math.max(262_144, 2 * o.contentBytes.max))
    this.repos = Array.from({ length: o.dids }, () => newRepo(this.rand, o))
    this.noise = Array.from({ length: o.noiseDids }, () => ({
      ...newRepo(this.rand, o),
      agents: [],
    }))
    this.#timeUs = o.startTimeUs
  }

  timeUs(): number {
    return this.#timeUs
  }

  nowIso(): string {
    return isoFromMs(Math.floor(this.#timeUs / 1000))
  }

  bump(name: string): void {
    this.stats.anomalies[name] = (this.stats.anomalies[name] ?? 0) + 1
  }

  schedule(delay: number, run: () => Emit): void {
    const item = { due: this.#step + delay, run }
    let i = this.#pending.length
    while (i > 0 && this.#pending[i - 1].due > item.due) i--
    this.#pending.splice(i, 0, item)
  }

  later(delay: number, repo: Repo, run: () => Emit): void {
    const guarded = (): Emit => {
      if (repo.purged || (!repo.active && !repo.reactivating)) return null
      if (!repo.active) {
        this.schedule(this.rand.int(20, 80), guarded)
        return null
      }
      return run()
    }
    this.schedule(delay, guarded)
  }

  commit(
    repo: Repo,
    collection: string,
    operation: JetstreamOperation,
    rkey: string,
    record?: Record<string, unknown>,
  ): JetstreamEvent {
    const rev = tidFromMicros(this.#timeUs, repo.revClock)
    const c: JetstreamCommitEvent['commit'] = { rev, operation, collection, rkey }
    if (record) {
      c.record = record
      // rev is unique per repo, so the cheap CID still changes whenever the record does.
      c.cid = this.o.realCids
        ? realCid(record)
        : fakeCid(`${repo.did}/${collection}/${rkey}/${rev}`)
    }
    return { did: repo.did, time_us: this.#timeUs, kind: 'commit', commit: c }
  }

  account(repo: Repo, active: boolean, status?: string): JetstreamEvent {
    const account = { active, did: repo.did, seq: ++this.#seq, ...(status ? { status } : {}) }
    return {
      did: repo.did,
      time_us: this.#timeUs,
      kind: 'account',
      account: { ...account, time: this.nowIso() },
    }
  }

  identity(repo: Repo): JetstreamEvent {
    repo.handle = newHandle(this.rand)
    const identity = { did: repo.did, handle: repo.handle, seq: ++this.#seq, time: this.nowIso() }
    return { did: repo.did, time_us: this.#timeUs, kind: 'identity', identity }
  }

  /** Moves the clock on by a random gap around the mean interval. */
  tick(): void {
    this.#timeUs += 1 + Math.floor(this.rand.next() * 2 * this.o.meanIntervalUs)
  }

  /** The follow-up due at this step, taken off the schedule, or null. */
  takeDue(): (() => Emit) | null {
    return this.#pending.length && this.#pending[0].due <= this.#step
      ? this.#pending.shift()!.run
      : null
  }

  /** Counts an event emitted, and moves the scheduler's step on. */
  count(ev: JetstreamEvent): void {
    this.#step++
    this.stats.events++
    this.stats.byKind[ev.kind]++
    if (ev.kind === 'commit') {
      const key = `${ev.commit.collection}:${ev.commit.operation}`
      this.stats.commits[key] = (this.stats.commits[key] ?? 0) + 1
    }
  }
}

class Generator implements DemoGenerator {
  readonly options: GeneratorOptions
  readonly #sim: Simulation
  readonly #actions: Actions
  readonly #weights: Array<[Action, number]>
  readonly #weightSum: number

  constructor(sim: Simulation) {
    this.options = sim.o
    this.#sim = sim
    this.#actions = new Actions(sim)
    this.#weights = Object.entries(sim.o.weights) as Array<[Action, number]>
    this.#weightSum = this.#weights.reduce((s, [, w]) => s + w, 0)
  }

  next(): JetstreamEvent {
    for (;;) {
      // A gap per attempt, even a fruitless one, keeps time_us strictly increasing.
      this.#sim.tick()
      const due = this.#sim.takeDue()
      const ev = due ? due() : this.#randomAction()
      if (!ev) continue
      this.#sim.count(ev)
      return ev
    }
  }

  generate(n: number): JetstreamEvent[] {
    return Array.from({ length: n }, () => this.next())
  }

  stats(): GeneratorStats {
    return structuredClone(this.#sim.stats)
  }

  *[Symbol.iterator](): Iterator<JetstreamEvent> {
    for (;;) yield this.next()
  }

  #randomAction(): Emit {
    const rand = this.#sim.rand
    if (rand.chance(this.options.noiseRatio)) return this.#actions.noise()
    let x = rand.next() * this.#weightSum
    for (const [name, w] of this.#weights) {
      x -= w
      if (x < 0) return this.#actions[name]()
    }
    return this.#actions.newConversation()
  }
}
