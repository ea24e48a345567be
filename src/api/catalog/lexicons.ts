import { readdirSync, readFileSync } from 'node:fs'
import { type LexiconDoc, Lexicons, type LexXrpcQuery, ValidationError } from '@atproto/lexicon'
import { badRequest } from '../http-errors.ts'
import { parseActor, parseRkey, strictInteger } from '../params.ts'

// The query lexicons of lexicons/xyz/quasigod/lab/letta/appview/, loaded once, and the one
// place a read's parameters are checked: REST, XRPC and the UI's reads all come through
// `checkParams`, so a bad value gets the same 400 and message by every door.

const DIR = new URL('../../../lexicons/xyz/quasigod/lab/letta/appview/', import.meta.url)

/** The authority of every query this service defines. */
export const XRPC_NAMESPACE = 'xyz.quasigod.lab.letta.appview'

export const LEXICONS = new Lexicons(
  readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(new URL(f, DIR), 'utf8')) as LexiconDoc),
)

export const QUERIES: ReadonlyMap<string, LexXrpcQuery> = new Map(
  [...LEXICONS]
    .filter((doc) => doc.defs.main?.type === 'query')
    .map((doc) => [doc.id, doc.defs.main as LexXrpcQuery]),
)

/** The query lexicon of `nsid`; a read without one is a programming error. */
export function queryOf(nsid: string): LexXrpcQuery {
  const def = QUERIES.get(nsid)
  if (!def) throw new Error(`no query lexicon ${nsid}`)
  return def
}

/** Parameters as a path and a query string carry them: strings, a list when repeated. */
export type RawParams = Record<string, string | string[] | undefined>
/** Parameters checked against their lexicon: integers are numbers, defaults applied. */
export type CheckedParams = Record<string, unknown>

type LexParam = NonNullable<LexXrpcQuery['parameters']>['properties'][string]

/**
 * One value as its lexicon type: an integer in plain decimal digits within its bounds (`1e2`,
 * `+5` or `05` is a typo, not a guess); repos and record keys parsed by params.ts for its messages.
 */
function decoded(name: string, prop: LexParam, value: string | string[]): unknown {
  if (Array.isArray(value)) throw badRequest(`${name} must be given once`)
  if (prop.type === 'integer') {
    const { minimum: min = 0, maximum: max } = prop
    const n = strictInteger(value, min, max ?? Number.MAX_SAFE_INTEGER)
    if (n !== null) return n
    throw badRequest(
      max === undefined
        ? `${name} must be an integer >= ${min} in plain decimal digits`
        : `${name} must be an integer from ${min} to ${max}, in plain decimal digits`,
    )
  }
  const format = 'format' in prop ? prop.format : undefined
  if (format === 'at-identifier') parseActor(value, name)
  else if (format === 'record-key') parseRkey(value, name)
  return value
}

/**
 * The parameters of a call of `nsid`, checked against its lexicon (defaults applied); a 400
 * names the first problem. Undeclared parameters are dropped, as XRPC servers do.
 */
export function checkParams(nsid: string, raw: RawParams): CheckedParams {
  const params = queryOf(nsid).parameters
  const out: CheckedParams = {}
  for (const [name, prop] of Object.entries(params?.properties ?? {})) {
    const value = raw[name]
    if (value !== undefined) out[name] = decoded(name, prop, value)
  }
  for (const name of params?.required ?? [])
    if (out[name] === undefined) throw badRequest(`${name} is required`)
  try {
    return LEXICONS.assertValidXrpcParams(nsid, out) as CheckedParams
  } catch (err) {
    if (err instanceof ValidationError) throw badRequest(err.message)
    throw err
  }
}

/** The parameters (those in `only`, or all) as OpenAPI documents them: strings, all of them. */
export function paramsSchema(nsid: string, only?: readonly string[]): object {
  const params = queryOf(nsid).parameters
  const properties: Record<string, object> = {}
  for (const [name, prop] of Object.entries(params?.properties ?? {})) {
    if (only && !only.includes(name)) continue
    const { description } = prop as { description?: string }
    const format = 'format' in prop && prop.format ? ` (${prop.format})` : ''
    properties[name] = {
      type: prop.type === 'array' ? 'array' : 'string',
      description: `${prop.type}${format}${description ? `: ${description}` : ''}`,
    }
  }
  const required = (params?.required ?? []).filter((n) => n in properties)
  return { type: 'object', properties, required }
}
