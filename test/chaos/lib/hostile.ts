import type { JetstreamEvent } from '../../../demo-network/generator.ts'
import { compileSystemPrompt, sha256Hex } from '../../../demo-network/letta-compile.ts'
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

// Letta-shaped records with the defects a broken or hostile writer gives them (issue 41):
// an agent whose `system` is not a string, whose `tags` is not an array, whose `name` is
// 10,000 characters; a compiled prompt whose core memory has no, two or a malformed
// metadata block, an unclosed <file>, duplicate file names, or 200 KB on one line. Each is a
// version of a record an earlier line of the file wrote, at that line's rev: the product
// reads and parses it whole, and its rev guard refuses it as a replay, so the end state
// stays the baseline's. When the earlier line wrote no such record, the same body goes
// under a record key no repo can have, and is refused and counted.

const CORE = '{CORE_MEMORY}'
const lettaSystem = (r: Random) =>
  `You are a helpful agent.\n<base_instructions>\n${'Answer briefly. '.repeat(r.int(5, 40))}\n</base_instructions>\n\n${CORE}`

const lettaAgent = (r: Random, over: Record<string, unknown>) => ({
  $type: `${KEPT}agent`,
  id: `agent-${r.int(1, 1e6)}`,
  name: 'helper',
  description: 'A Letta agent',
  system: lettaSystem(r),
  tags: ['origin:letta-code'],
  model: 'openai/gpt-4.1',
  model_settings: { temperature: 0.7 },
  ...over,
})

/** A compiled prompt as Letta writes it, with its core memory replaced by `core`. */
function lettaPrompt(r: Random, did: string, rkey: string, core: (meta: string) => string) {
  const system = lettaSystem(r)
  const good = compileSystemPrompt({
    agentId: 'agent-1',
    system,
    conversationId: 'conv-1',
    files: [
      { path: 'MEMORY.md', raw: '# Memory' },
      { path: 'human.md', raw: 'The user.' },
    ],
    memfsRevision: sha256Hex(String(r.int(1, 1e9))).slice(0, 40),
    compiledAt: new Date(1_764_460_800_000),
    previousMessageCount: r.int(0, 50),
  })
  const meta = good.coreMemory.slice(good.coreMemory.indexOf('<memory_metadata>'))
  const coreMemory = core(meta)
  return {
    $type: `${KEPT}compiledPrompt`,
    ...good,
    content: system.split(CORE).join(coreMemory),
    coreMemory,
    agent: `at://${did}/${KEPT}agent/${rkey}`,
    conversation: `at://${did}/${KEPT}conversation/${rkey}`,
  }
}

const v2 = (body: string) => `<memory root="\${MEMORY_DIR}">\n${body}\n</memory>`

const PROMPT_DEFECTS: Record<string, (meta: string) => string> = {
  'core memory without a metadata block': () => v2('<file name="human.md">\nThe user.\n</file>'),
  'core memory with two metadata blocks': (m) => `${v2('')}\n\n${m}\n\n${m}`,
  'core memory with a malformed metadata block': (m) =>
    `${v2('')}\n\n${m.replace('- AGENT_ID', 'AGENT_ID')}`,
  'unclosed <file>': (m) => `${v2('<file name="human.md">\nThe user.')}\n\n${m}`,
  'duplicate file names': (m) =>
    `${v2('<file name="a.md">\n1\n</file>\n<file name="a.md">\n2\n</file>')}\n\n${m}`,
  '200 KB on one line': (m) => `${'x'.repeat(200_000)}\n\n${m}`,
}

const AGENT_DEFECTS: Record<string, (r: Random) => Record<string, unknown>> = {
  'agent system not a string': () => ({ system: { template: 42 } }),
  'agent tags not an array': () => ({ tags: 'a,b' }),
  'agent name of 10,000 characters': (r) => ({ name: r.pick(['n', 'é', '<b>']).repeat(10_000) }),
}

/** The create or update of `collection` that `earlier` is, if it is one. */
function earlierWrite(earlier: string, collection: string) {
  try {
    const e = JSON.parse(earlier) as JetstreamEvent
    if (e.kind !== 'commit' || e.commit.collection !== collection) return null
    return e.commit.operation === 'delete'
      ? null
      : { did: e.did, rkey: e.commit.rkey, rev: e.commit.rev }
  } catch {
    return null
  }
}

/** A Letta-shaped defective record: a replay of an earlier write, else a refused line. */
function lettaDefect(
  kind: string,
  collection: string,
  body: (did: string, rkey: string) => unknown,
): Maker {
  return (_r, near, earlier) => {
    const w = earlierWrite(earlier, collection)
    const did = w?.did ?? near.did
    const rkey = w?.rkey ?? '../..'
    const line = {
      did,
      time_us: near.time_us,
      kind: 'commit',
      commit: {
        rev: w?.rev ?? '3m6sm7ncxdj2b',
        operation: 'update',
        collection,
        rkey,
        cid: 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm',
        record: body(did, rkey),
      },
    }
    return w
      ? { kind: `Letta ${kind} (replayed rev)`, text: JSON.stringify(line), counted: false }
      : refused(`Letta ${kind} (bad rkey)`, line)
  }
}

const LETTA_MAKERS: Record<string, Maker> = Object.fromEntries([
  ...Object.entries(AGENT_DEFECTS).map(([kind, over]) => [
    kind,
    (r: Random, near: JetstreamEvent, earlier: string) =>
      lettaDefect(kind, `${KEPT}agent`, () => lettaAgent(r, over(r)))(r, near, earlier),
  ]),
  ...Object.entries(PROMPT_DEFECTS).map(([kind, core]) => [
    kind,
    (r: Random, near: JetstreamEvent, earlier: string) =>
      lettaDefect(kind, `${KEPT}compiledPrompt`, (did, rkey) => lettaPrompt(r, did, rkey, core))(
        r,
        near,
        earlier,
      ),
  ]),
])

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
  ...LETTA_MAKERS,
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
