import type { JetstreamEvent } from '../../../demo-network/generator.ts'
import type { Random } from '../../../demo-network/random.ts'

// Replay lines an operator's file (or a hostile upstream) may hold, mixed into the suite's
// events. Every `counted` line must be refused, counted and logged, and must not move the
// cursor; the far-future ones are the lines that once poisoned it (issue 9, item 3).
// `stale` lines are exact copies of earlier events: valid, to be ignored as replays.

export interface HostileLine {
  kind: string
  text: string
  /** Refused as bad input (counted in skippedBad and the error metric). */
  counted: boolean
}

export const FAR_FUTURE_US = 9_007_199_254_740_991

type Maker = (rand: Random, near: JetstreamEvent, earlier: string) => HostileLine

const KEPT = 'xyz.quasigod.lab.letta.'
const KEPT_COLLECTIONS = new Set(['compiledPrompt', 'conversation', 'agent'].map((c) => KEPT + c))
/** A commit of a kept collection near `near` in time: refusals must be of lines we would keep. */
const commitOf = (near: JetstreamEvent) =>
  near.kind === 'commit' && KEPT_COLLECTIONS.has(near.commit.collection)
    ? near.commit
    : {
        rev: '3m6sm7ncxdj2b',
        operation: 'create',
        collection: `${KEPT}agent`,
        rkey: '3m6sm7ncql52b',
        record: {},
      }

const refused = (kind: string, v: unknown): HostileLine => ({
  kind,
  text: typeof v === 'string' ? v : JSON.stringify(v),
  counted: true,
})

/** The line of the issue: a refused event whose time_us is the largest safe integer. */
export const poisonLine: Maker = (_r, near) =>
  refused('far-future refused', {
    did: 'not-a-did',
    time_us: FAR_FUTURE_US,
    kind: 'commit',
    commit: commitOf(near),
  })

/** did and time_us of `near` (never its account or identity body). */
const at = (near: JetstreamEvent) => ({ did: near.did, time_us: near.time_us })
const TEN_YEARS_US = 10 * 365 * 86_400e6

export const MAKERS: Record<string, Maker> = {
  poison: poisonLine,
  futureBadRkey: (_r, near) =>
    refused('future bad rkey', {
      ...at(near),
      time_us: Date.now() * 1000 + TEN_YEARS_US,
      kind: 'commit',
      commit: { ...commitOf(near), rkey: '../..' },
    }),
  truncated: (r, _n, earlier) =>
    refused('truncated JSON', earlier.slice(0, r.int(1, earlier.length - 2))),
  scalar: (r) => refused('not an object', r.pick(['null', '[]', '42', '"x"', 'true', '{}'])),
  unknownKind: (_r, near) => refused('unknown kind', { ...at(near), kind: 'weird' }),
  // Not a collection we keep: a commit that only moves the cursor (Jetstream filters it).
  badNsid: (_r, near) => ({
    ...refused('bad nsid', {
      ...at(near),
      kind: 'commit',
      commit: { ...commitOf(near), collection: 'not an nsid' },
    }),
    counted: false,
  }),
  badRev: (_r, near) =>
    refused('bad rev', { ...at(near), kind: 'commit', commit: { ...commitOf(near), rev: 'zz' } }),
  // The product checks CIDs loosely on purpose (length, no spaces): these two it refuses.
  badCid: (r, near) =>
    refused('bad cid', {
      ...at(near),
      kind: 'commit',
      commit: {
        ...commitOf(near),
        operation: 'create',
        cid: r.pick(['', 'bafy not a cid']),
        record: { $type: `${KEPT}agent` },
      },
    }),
  badOp: (_r, near) =>
    refused('bad operation', {
      ...at(near),
      kind: 'commit',
      commit: { ...commitOf(near), operation: 'upsert' },
    }),
  recordString: (_r, near) =>
    refused('record not an object', {
      ...at(near),
      kind: 'commit',
      commit: {
        ...commitOf(near),
        operation: 'create',
        cid: 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm',
        record: 'hi',
      },
    }),
  noCommit: (_r, near) => refused('commit missing', { ...at(near), kind: 'commit' }),
  badTime: (r, near) =>
    refused(
      'bad time_us',
      `{"did":"${near.did}","time_us":${r.pick(['"123"', '-5', '1.5', '1e400', '18446744073709551616', 'null'])},"kind":"commit","commit":${JSON.stringify(commitOf(near))}}`,
    ),
  badAccount: (r, near) =>
    refused('bad account', {
      ...at(near),
      kind: 'account',
      account: {
        active: r.pick(['yes', 1, null]),
        did: near.did,
        seq: r.pick([-1, 1e30, 'x']),
        time: 'never',
      },
    }),
  // Accepted: an identity's handle is verified before use and stored as absent if it fails.
  badIdentity: (_r, near) => ({
    ...refused('unverifiable identity', {
      ...at(near),
      kind: 'identity',
      identity: { did: near.did, handle: 'not a handle!!', seq: 1, time: 'x' },
    }),
    counted: false,
  }),
  controlChars: (_r, near) =>
    refused(
      'NUL and lone surrogates',
      `{"did":"did:plc:\\u0000\\ud800","time_us":${near.time_us},"kind":"commit","commit":${JSON.stringify(commitOf(near))}}`,
    ),
  huge: (r) => refused('1 MB of junk', `{"did":"${'x'.repeat(r.int(1, 1 << 20))}`),
  bom: (_r, _n, earlier) => refused('BOM before a copy', `\ufeff${earlier}`),
  stale: (_r, _n, earlier) => ({ kind: 'stale copy', text: earlier, counted: false }),
  blank: (r) => ({ kind: 'blank', text: r.pick(['', '   ', '\t']), counted: false }),
}

export interface HostileFile {
  lines: string[]
  counted: number
  byKind: Record<string, number>
  /** Index in `lines` of the first far-future poison line. */
  poisonAt: number
  /** time_us of the clean event right after that line. */
  afterPoisonUs: number
}

/**
 * The clean lines with `n` hostile ones mixed in at random places (never after the last
 * clean line, so the right final cursor is the last clean event's time_us); a poison
 * line sits at about a quarter of the file.
 */
export function mixHostile(
  rand: Random,
  events: JetstreamEvent[],
  clean: string[],
  n: number,
): HostileFile {
  const names = Object.keys(MAKERS)
  const insertAt = new Map<number, HostileLine[]>()
  const add = (i: number, h: HostileLine) => insertAt.set(i, [...(insertAt.get(i) ?? []), h])
  const poisonIdx = Math.floor(clean.length / 4)
  add(poisonIdx, poisonLine(rand, events[poisonIdx], clean[poisonIdx - 1]))
  for (let k = 1; k < n; k++) {
    const i = rand.int(1, clean.length - 1)
    add(i, MAKERS[rand.pick(names)](rand, events[i], clean[rand.int(0, i - 1)]))
  }
  const lines: string[] = []
  const byKind: Record<string, number> = {}
  let counted = 0
  let poisonAt = -1
  for (let i = 0; i < clean.length; i++) {
    for (const h of insertAt.get(i) ?? []) {
      if (i === poisonIdx && poisonAt === -1 && h.text.includes(String(FAR_FUTURE_US)))
        poisonAt = lines.length
      lines.push(h.text)
      byKind[h.kind] = (byKind[h.kind] ?? 0) + 1
      if (h.counted) counted++
    }
    lines.push(clean[i])
  }
  return { lines, counted, byKind, poisonAt, afterPoisonUs: events[poisonIdx].time_us }
}
