import type { Logger } from 'pino'
import type { ChainHead } from '../../../db/repo-chain.ts'
import { seqCursor } from '../../../model/cursor.ts'
import type { ChainEvent, SourceItem } from '../../../model/events.ts'
import type { Metrics } from '../../../observe/metrics.ts'
import { type CommitBody, type KeyLookup, opEvents } from '../signature.ts'
import { type CommitVerdict, checkCommit, checkSync, type SyncBody } from './check-commit.ts'
import type { ChainTracker } from './tracker.ts'

// The verified firehose's #commit and #sync frames under Sync 1.1: each frame of a tracked
// repo is checked against the repo's chain (check-commit.ts), one repo at a
// time in arrival order, and turns into record events plus the repo's new chain state.

export interface ChainFrameOptions {
  tracker: ChainTracker
  resolveKey: KeyLookup
  match: (collection: string) => boolean
  logger: Logger
  metrics: Metrics
  /** A repo whose commits keep arriving while it waits: make sure a resync is on its way. */
  onWaiting: (did: string) => void
  /** Keeps a waiting repo's commit to judge again after its resync (resync-buffer.ts). */
  hold?: (body: CommitBody, timeUs: number) => void
}

export interface ChainFrames {
  commit(body: CommitBody, timeUs: number): Promise<SourceItem[]>
  sync(body: SyncBody & { seq: number }, timeUs: number): Promise<SourceItem[]>
}

export function createChainFrames(o: ChainFrameOptions): ChainFrames {
  const { tracker, logger, metrics } = o
  const deps = { resolveKey: o.resolveKey, match: o.match }
  const countOps = (body: CommitBody, outcome: 'ignored_rev' | 'error') => {
    for (const op of body.ops) {
      const collection = op.path.slice(0, op.path.indexOf('/'))
      if (o.match(collection))
        metrics.eventsTotal.inc({ source: 'firehose', collection, op: op.action, outcome })
    }
  }

  const judge = async (body: CommitBody, timeUs: number): Promise<SourceItem[]> => {
    const did = body.repo
    const seq = body.seq
    const cursorOnly = itemAt(null, seq, timeUs)
    const head = await tracker.head(did)
    const v: CommitVerdict = await checkCommit(deps, body, head, timeUs)
    const log = { did, seq, rev: body.rev }
    switch (v.kind) {
      case 'replay':
        countOps(body, 'ignored_rev')
        return cursorOnly
      case 'waiting':
        logger.debug({ ...log, state: v.state }, 'commit of a repo awaiting resync, held')
        o.hold?.(body, timeUs)
        o.onWaiting(did)
        return cursorOnly
      case 'reject':
        if (v.reason === 'future_rev') metrics.chainBreaksTotal.inc({ reason: 'future_rev' })
        countOps(body, 'error')
        logger.warn({ ...log, reason: v.detail }, 'firehose commit rejected')
        return cursorOnly
      case 'break':
        metrics.chainBreaksTotal.inc({ reason: v.reason })
        countOps(body, 'error')
        logger.warn({ ...log, reason: v.reason, detail: v.detail }, 'repo chain break: resync')
        // Judged again after the resync: dropped as a replay if the fetched repo has it.
        o.hold?.(body, timeUs)
        desynchronize(tracker, did, head)
        return itemAt(v.chain, seq, timeUs)
      case 'accept': {
        if (v.legacy) metrics.legacyCommitsTotal.inc()
        tracker.setHead({ did, rev: v.chain.rev, data: v.chain.data, state: 'synchronized' })
        const provenance = { source: 'firehose' as const, verified: true, commit: v.chain.commit }
        const events = opEvents(body, v.events, o.match, timeUs, skipOp(o, body), provenance)
        // Only the last item completes the frame: an earlier cursor replays all of it.
        const items = events.map((event) => ({ event, cursor: seqCursor(seq - 1), timeUs }))
        return [...items, ...itemAt(v.chain, seq, timeUs)]
      }
    }
  }

  return {
    // Registered synchronously, so a repo's frames are judged in the order they arrived.
    commit: (body, timeUs) => tracker.serialize(body.repo, () => judge(body, timeUs)),
    sync: (body, timeUs) => tracker.serialize(body.did, () => judgeSync(o, body, timeUs)),
  }
}

async function judgeSync(
  o: ChainFrameOptions,
  body: SyncBody & { seq: number },
  timeUs: number,
): Promise<SourceItem[]> {
  const { tracker, logger, metrics } = o
  const { did, seq } = body
  const head = await tracker.head(did)
  if (head && head.state !== 'synchronized') {
    // A resync is on its way already; it brings a state at least as new as this.
    o.onWaiting(did)
    return itemAt(null, seq, timeUs)
  }
  const v = await checkSync(o.resolveKey, body, head, timeUs)
  const log = { did, seq, rev: body.rev }
  switch (v.kind) {
    case 'noop':
      return itemAt(null, seq, timeUs)
    case 'unverifiable':
    case 'future_rev':
      if (v.kind === 'future_rev') metrics.chainBreaksTotal.inc({ reason: 'future_rev' })
      else metrics.unverifiableSyncsTotal.inc()
      logger.warn({ ...log, reason: v.detail }, 'firehose #sync ignored')
      return itemAt(null, seq, timeUs)
    case 'advance':
      tracker.setHead({ did, rev: v.chain.rev, data: v.chain.data, state: 'synchronized' })
      return itemAt(v.chain, seq, timeUs)
    case 'resync':
      metrics.chainBreaksTotal.inc({ reason: 'sync_event' })
      logger.info(log, 'firehose #sync: the repo moved on, resync')
      desynchronize(tracker, did, head)
      return itemAt(v.chain, seq, timeUs)
  }
}

/** @atproto/sync's rule: an op not proven (or JSON cannot hold) is dropped; the chain moves on. */
const skipOp =
  ({ logger, metrics }: ChainFrameOptions, body: CommitBody) =>
  (op: CommitBody['ops'][number], collection: string, reason: string) => {
    metrics.eventsTotal.inc({ source: 'firehose', collection, op: op.action, outcome: 'error' })
    logger.warn({ did: body.repo, seq: body.seq, path: op.path, reason }, 'op skipped')
  }

const itemAt = (event: ChainEvent | null, seq: number, timeUs: number): SourceItem[] => [
  { event, cursor: seqCursor(seq), timeUs },
]

/** The stored head stays (a resync starts from it); only the state says it is stale. */
function desynchronize(tracker: ChainTracker, did: string, head: ChainHead | null): void {
  tracker.setHead({
    did,
    rev: head?.rev ?? null,
    data: head?.data ?? null,
    state: 'desynchronized',
  })
}
