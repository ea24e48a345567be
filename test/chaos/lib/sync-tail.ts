import { tidFromMicros } from '../../../demo-network/tid.ts'
import type { JetstreamCommitEvent, JetstreamEvent } from '../../../demo-network/types.ts'
import type { EventSet } from './events.ts'

// The end of a Jetstream v2 stream as a repo's resync leaves it (issue 28): `#sync(did, R)`,
// then the repo's records re-sent as creates at R (same record, same CID), all but one
// prompt, and then nothing at all. The prompt not re-sent is gone from the repo; the
// reference replays the same events, the same creates (they move each record to rev R)
// and that prompt's delete.

const PROMPT = 'xyz.quasigod.lab.letta.compiledPrompt'

export interface SyncTail {
  did: string
  rev: string
  /** The replacement creates, as the server sends them after the `#sync`. */
  creates: JetstreamCommitEvent[]
  /** The reference's events: the set's lines, the creates, the left-out prompt's delete. */
  referenceLines: string[]
  referenceLastUs: number
}

/** The active repo with the most live prompts (at least 2), resynced without its newest. */
export function syncTail(set: EventSet): SyncTail {
  const live = liveRecords(set.events)
  const did = repoWithMostPrompts(live, inactiveRepos(set.events))
  const mine = [...live.values()].filter((e) => e.did === did)
  const left = mine.filter((e) => e.commit.collection === PROMPT).at(-1)!
  const lastUs = set.lastTimeUs
  const rev = tidFromMicros(lastUs + 1_000_000, 1)
  const creates = mine
    .filter((e) => e !== left)
    .map((e, i) => ({
      ...e,
      time_us: lastUs + 1_000_000 + i,
      commit: { ...e.commit, rev, operation: 'create' as const },
    }))
  // After every create: the reference waits for its cursor to reach the last line's time,
  // and a delete stamped before the creates let that wait end while they were still being
  // indexed (the reference then missed some of them, seed 559446698 on a loaded machine).
  const del: JetstreamCommitEvent = {
    did,
    time_us: lastUs + 1_000_000 + creates.length,
    kind: 'commit',
    commit: { rev, operation: 'delete', collection: PROMPT, rkey: left.commit.rkey },
  }
  return {
    did,
    rev,
    creates,
    referenceLines: [...set.lines, ...creates.map((e) => JSON.stringify(e)), JSON.stringify(del)],
    referenceLastUs: del.time_us,
  }
}

/** Each record's last write, where it was not deleted: what a repo export would hold. */
function liveRecords(events: JetstreamEvent[]): Map<string, JetstreamCommitEvent> {
  const live = new Map<string, JetstreamCommitEvent>()
  for (const e of events) {
    if (e.kind !== 'commit' || !e.commit.collection.startsWith('xyz.quasigod.lab.letta.')) continue
    const key = `${e.did}/${e.commit.collection}/${e.commit.rkey}`
    if (e.commit.operation === 'delete') live.delete(key)
    else live.set(key, e)
  }
  return live
}

/** Repos whose last account event left them inactive (taken down, deactivated). */
function inactiveRepos(events: JetstreamEvent[]): Set<string> {
  const inactive = new Set<string>()
  for (const e of events) {
    if (e.kind !== 'account') continue
    if (e.account.active) inactive.delete(e.did)
    else inactive.add(e.did)
  }
  return inactive
}

function repoWithMostPrompts(live: Map<string, JetstreamCommitEvent>, skip: Set<string>): string {
  const prompts = new Map<string, number>()
  for (const e of live.values())
    if (e.commit.collection === PROMPT && !skip.has(e.did))
      prompts.set(e.did, (prompts.get(e.did) ?? 0) + 1)
  const [did, n] = [...prompts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]
  if (n < 2) throw new Error('no repo with two live prompts to resync')
  return did
}
