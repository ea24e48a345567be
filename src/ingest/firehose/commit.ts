import { parseCommitUnauthenticated } from '@atproto/sync'
import type { Logger } from 'pino'
import { seqCursor } from '../../model/cursor.ts'
import type { CommitEvent, SourceItem } from '../../model/events.ts'
import { recordJson } from '../lex-json.ts'
import { type KeyLookup, verifyCommit } from './signature.ts'
import { eventUs, reasonOf } from './values.ts'

// A `#commit` frame without Sync 1.1 chain state: its wanted ops, proven against the
// commit's MST and signature (or taken as sent from a trusted relay), as SourceItems.

export type CommitBody = Parameters<typeof parseCommitUnauthenticated>[0]
type RepoOp = CommitBody['ops'][number]
type ParsedOps = Awaited<ReturnType<typeof parseCommitUnauthenticated>>

export interface CommitContext {
  match: (collection: string) => boolean
  unauthenticated: boolean
  resolveKey: KeyLookup
  logger: Logger
  countError: (collection: string, op: string) => void
}

/** The items of a commit's wanted `ops`; one cursor-only item when none survives. */
export async function commitItems(
  ctx: CommitContext,
  body: CommitBody,
  ops: RepoOp[],
  timeUs: number | null,
): Promise<SourceItem[]> {
  const seq = body.seq
  const cursorOnly = [{ event: null, cursor: seqCursor(seq), timeUs }]
  const parsed = await parseOps(ctx, body, ops)
  if (parsed === null) return cursorOnly
  const items: SourceItem[] = []
  for (const op of ops) {
    const event = eventOfOp(ctx, body, op, parsed, timeUs)
    if (event) items.push({ event, cursor: seqCursor(seq), timeUs })
  }
  if (items.length === 0) return cursorOnly
  // Only the last item of a frame completes it: a cursor committed after an earlier item
  // must make a restart replay the whole frame (seq - 1), never skip the rest of it.
  for (let i = 0; i < items.length - 1; i++) items[i].cursor = seqCursor(seq - 1)
  return items
}

/** The proven ops; null (counted and logged) when the commit fails verification. */
async function parseOps(
  ctx: CommitContext,
  body: CommitBody,
  ops: RepoOp[],
): Promise<ParsedOps | null> {
  try {
    if (ctx.unauthenticated) return await parseCommitUnauthenticated(body, ctx.match)
    return (await verifyCommit(ctx.resolveKey, body, ctx.match)).events
  } catch (err) {
    for (const op of ops) ctx.countError(collectionOf(op.path), opLabel(op))
    ctx.logger.warn(
      { did: body.repo, seq: body.seq, rev: body.rev, reason: reasonOf(err) },
      'firehose commit failed verification, skipped',
    )
    return null
  }
}

function eventOfOp(
  ctx: CommitContext,
  body: CommitBody,
  op: RepoOp,
  parsed: ParsedOps,
  timeUs: number | null,
): CommitEvent | null {
  const { collection, rkey } = splitPath(op.path)
  const evt = parsed.find((p) => p.collection === collection && p.rkey === rkey)
  const action = opLabel(op)
  if (!evt || action === 'unknown') {
    // @atproto/sync drops ops the MST does not prove, and ops whose record block is absent.
    ctx.countError(collection, action)
    ctx.logger.warn(
      { did: body.repo, seq: body.seq, path: op.path, action: op.action },
      'firehose op not proven by its commit (or record missing), skipped',
    )
    return null
  }
  const json = evt.event === 'delete' ? { json: null } : recordJson(evt.record)
  if ('unrepresentable' in json) {
    ctx.countError(collection, action)
    ctx.logger.warn(
      { did: body.repo, seq: body.seq, path: op.path, reason: json.unrepresentable },
      'firehose record cannot be stored as JSON, skipped',
    )
    return null
  }
  return {
    kind: 'commit',
    did: body.repo,
    collection,
    rkey,
    rev: body.rev,
    op: action,
    cid: evt.event === 'delete' ? null : evt.cid.toString(),
    record: json.json,
    timeUs: eventUs(timeUs),
  }
}

export function isCommitBody(
  b: Record<string, unknown>,
): b is CommitBody & Record<string, unknown> {
  return (
    typeof b.repo === 'string' &&
    typeof b.rev === 'string' &&
    b.blocks instanceof Uint8Array &&
    b.commit != null &&
    Array.isArray(b.ops) &&
    b.ops.every((op) => op && typeof op.path === 'string' && typeof op.action === 'string')
  )
}

export function collectionOf(path: string): string {
  const slash = path.indexOf('/')
  return slash < 0 ? path : path.slice(0, slash)
}

function splitPath(path: string): { collection: string; rkey: string } {
  const slash = path.indexOf('/')
  return { collection: path.slice(0, slash), rkey: path.slice(slash + 1) }
}

function opLabel(op: RepoOp): CommitEvent['op'] | 'unknown' {
  const a: string = op.action
  return a === 'create' || a === 'update' || a === 'delete' ? a : 'unknown'
}
