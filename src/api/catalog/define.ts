import type { FastifyInstance, FastifyReply } from 'fastify'
import type { AppContext } from '../../context/context.ts'
import type { Database } from '../../db/client.ts'
import { readDidOfHandle } from '../../db/read/accounts.ts'
import { batchedPromptAnswers } from '../../db/read/prompts.ts'
import { cachedAnswer } from '../answer-cache-plugin.ts'
import type { CachePolicy } from '../http-cache.ts'
import type { Actor } from '../params.ts'
import type { PromptAnswerReader } from '../prompt-views.ts'
import { checkParams, type RawParams, XRPC_NAMESPACE } from './lexicons.ts'
import { outputSchema } from './output-schema.ts'

// A read of SPEC section 6, defined once: its query lexicon, how checked parameters become a
// key (a 400 or a 404 here), how it reads, its answer's JSON schema, and its cache key and
// repos when cached. REST routes, XRPC methods and UI pages are adapters over it.

export interface ReadContext {
  readonly db: AppContext['db']
  readonly nsids: AppContext['nsids']
  /** Prompt lookups that arrive together share a statement (db/read/batch.ts). */
  readonly readPrompt: PromptAnswerReader
  /** The source this process ingests with, whose cursor and hole getStats reports. */
  readonly ingest: FastifyInstance['apiOptions']['ingest']
}

declare module 'fastify' {
  interface FastifyInstance {
    /** One per app: the REST routes, the XRPC methods and the UI pages read through it. */
    reads: ReadContext
  }
}

export function readContext(
  ctx: Pick<AppContext, 'db' | 'nsids'>,
  ingest: FastifyInstance['apiOptions']['ingest'],
): ReadContext {
  return { db: ctx.db, nsids: ctx.nsids, readPrompt: batchedPromptAnswers(ctx.db), ingest }
}

/** The DID an actor names, or null when it is a handle the index does not know. */
export async function resolveActor(db: Database, actor: Actor): Promise<string | null> {
  return actor.kind === 'did' ? actor.did : readDidOfHandle(db, actor.handle)
}

export interface ReadDef<P, K, T> {
  /** The query's name under XRPC_NAMESPACE; its lexicon declares the parameters. */
  readonly name: string
  /** JSON schema of the answer, when REST's is not its lexicon's output as it is. */
  readonly output?: object
  readonly http: { cache: CachePolicy }
  /** The checked parameters parsed and resolved into what the read looks up (its key). */
  plan(c: ReadContext, params: P): Promise<K>
  run(c: ReadContext, key: K): Promise<T>
  /** Answers kept in the answer cache under `key` (null: not kept), dropped by `repos`' changes. */
  readonly cache?: {
    key(k: K): string | null
    repos(value: T, k: K): readonly string[]
  }
  /** When the answer is not plain JSON for `output` (a record spliced in as its text). */
  serialize?(json: (value: unknown) => string, value: T): string | Buffer
  /** The answer as the lexicon's data model holds it, when it differs (no fractions). */
  xrpc?(value: T): T
}

/** A read with its full NSID and its answer's JSON schema (serializes it by every door). */
export type Read<P = never, K = unknown, T = unknown> = ReadDef<P, K, T> & {
  readonly nsid: string
  readonly output: object
}

export function defineRead<P, K, T>(def: ReadDef<P, K, T>): Read<P, K, T> {
  const nsid = `${XRPC_NAMESPACE}.${def.name}`
  return { ...def, nsid, output: def.output ?? outputSchema(nsid) }
}

/** What `read` answers for `raw` (a UI page's read: not cached, as values, not text). */
export async function runRead<P, K, T>(c: ReadContext, read: Read<P, K, T>, raw: RawParams) {
  return read.run(c, await read.plan(c, checkParams(read.nsid, raw) as P))
}

/** Answers a request of `read`: from the answer cache when it keeps the answer. */
export async function sendRead<P, K, T>(
  app: FastifyInstance,
  reply: FastifyReply,
  read: Read<P, K, T>,
  raw: RawParams,
  door: 'rest' | 'xrpc',
): Promise<FastifyReply> {
  const c = app.reads
  const key = await read.plan(c, checkParams(read.nsid, raw) as P)
  // Fastify compiles the serializer once per route and schema.
  const compiled = reply.compileSerializationSchema(read.output as Record<string, unknown>)
  const json = (value: unknown) => compiled(value as Record<string, unknown>)
  const serialize = (value: T) => (read.serialize ? read.serialize(json, value) : json(value))
  // An answer XRPC reshapes is not the one the cache keeps.
  const reshape = door === 'xrpc' ? read.xrpc : undefined
  const cache = reshape ? undefined : read.cache
  const cacheKey = cache?.key(key) ?? null
  reply.type('application/json; charset=utf-8')
  if (cache && cacheKey !== null) {
    const load = () => read.run(c, key)
    const repos = (value: T) => cache.repos(value, key)
    const answer = await cachedAnswer(app.answers, cacheKey, load, serialize, repos)
    // http-cache.ts sends the ETag it was stored with instead of hashing the body again.
    return reply.header('etag', answer.etag).send(answer.payload)
  }
  const value = await read.run(c, key)
  return reply.send(serialize(reshape ? reshape(value) : value))
}
