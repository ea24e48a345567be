import { readdirSync, readFileSync } from 'node:fs'
import { type LexiconDoc, Lexicons, type LexXrpcQuery, ValidationError } from '@atproto/lexicon'
import { badRequest, DECIMAL_PATTERN } from '../http-errors.ts'

// The query lexicons of lexicons/xyz/quasigod/lab/letta/appview/ (proposals under the record
// lexicon's authority), loaded once, and the one place an XRPC call's parameters are
// validated: by @atproto/lexicon, against the method's own lexicon.

const DIR = new URL('../../../lexicons/xyz/quasigod/lab/letta/appview/', import.meta.url)

/** The authority of every query this service defines. */
export const XRPC_NAMESPACE = 'xyz.quasigod.lab.letta.appview'

function loadDocs(): LexiconDoc[] {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(new URL(f, DIR), 'utf8')) as LexiconDoc)
}

export const LEXICONS = new Lexicons(loadDocs())

/** The queries, by NSID. */
export const QUERIES: ReadonlyMap<string, LexXrpcQuery> = new Map(
  [...LEXICONS]
    .filter((doc) => doc.defs.main?.type === 'query')
    .map((doc) => [doc.id, doc.defs.main as LexXrpcQuery]),
)

export type XrpcParams = Record<string, unknown>
type QueryString = Record<string, string | string[] | undefined>

const DECIMAL = new RegExp(DECIMAL_PATTERN)

/**
 * A query-string value as the lexicon type it is declared with. Integers are plain decimal
 * digits, as everywhere in this API (params.ts strictInteger): `1e2`, `0x10`, `+5` or `05`
 * stay strings, and the lexicon's check names the parameter ("limit must be an integer").
 * A repeated parameter stays a list, which no scalar parameter accepts (the lexicons here
 * declare no array parameters).
 */
function decode(type: string, value: string | string[]): unknown {
  if (Array.isArray(value)) return value
  if (type === 'integer' && value.length <= 16 && DECIMAL.test(value)) return Number(value)
  if (type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true'
  return value
}

/**
 * The parameters of a call of `nsid`, decoded by their lexicon types and validated by
 * @atproto/lexicon (defaults applied); a 400 InvalidRequest naming the first problem.
 * Parameters the lexicon does not declare are dropped, as XRPC servers do.
 */
export function paramsOf(nsid: string, def: LexXrpcQuery, query: QueryString): XrpcParams {
  const declared = def.parameters?.properties ?? {}
  const raw: XrpcParams = {}
  for (const [name, prop] of Object.entries(declared)) {
    const value = query[name]
    if (value !== undefined) raw[name] = decode(prop.type, value)
  }
  try {
    return LEXICONS.assertValidXrpcParams(nsid, raw) as XrpcParams
  } catch (err) {
    if (err instanceof ValidationError) throw badRequest(err.message)
    throw err
  }
}

/** The parameters as OpenAPI query parameters (documentation; the lexicon validates). */
export function queryStringSchema(def: LexXrpcQuery): object {
  const properties: Record<string, object> = {}
  for (const [name, prop] of Object.entries(def.parameters?.properties ?? {})) {
    const { description } = prop as { description?: string }
    properties[name] = {
      type: prop.type === 'array' ? 'array' : 'string',
      description: `${prop.type}${'format' in prop && prop.format ? ` (${prop.format})` : ''}${description ? `: ${description}` : ''}`,
    }
  }
  return { type: 'object', properties, required: def.parameters?.required ?? [] }
}
