import type { LexObject, LexRefVariant, LexUserType, LexXrpcQuery } from '@atproto/lexicon'
import { LEXICONS, queryOf } from './lexicons.ts'

// A query's answer schema, derived from its lexicon's output so there is one schema system:
// it drives Fastify's serializer and documents OpenAPI (`unknown`, a record, becomes `{}`).

type Json = Record<string, unknown>
type LexNode = LexUserType | LexRefVariant | LexObject

const described = (node: { description?: string }, schema: Json): Json =>
  node.description ? { ...schema, description: node.description } : schema

/** `schema` that also admits null (for a lexicon's `nullable` field). */
function orNull(schema: Json): Json {
  if (schema.type === undefined) return schema
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  return { ...schema, type: [...types, 'null'] }
}

/** A ref as a full lexicon URI (Lexicons rewrites the refs it loads to `lex:` URIs). */
function uriOf(ref: string, docId: string): string {
  if (ref.startsWith('#')) return `lex:${docId}${ref}`
  return ref.startsWith('lex:') ? ref : `lex:${ref}`
}

function objectSchema(node: LexObject, docId: string): Json {
  const nullable = node.nullable ?? []
  const properties: Json = {}
  for (const [name, prop] of Object.entries(node.properties ?? {})) {
    const schema = toJsonSchema(prop as LexNode, docId)
    properties[name] = nullable.includes(name) ? orNull(schema) : schema
  }
  const required = node.required ?? []
  return described(node, { type: 'object', properties, ...(required.length ? { required } : {}) })
}

function toJsonSchema(node: LexNode, docId: string): Json {
  switch (node.type) {
    case 'ref': {
      const uri = uriOf(node.ref, docId)
      const def = LEXICONS.getDef(uri)
      if (!def) throw new Error(`lexicon ref ${node.ref} in ${docId} names nothing`)
      return toJsonSchema(def as LexNode, uri.slice('lex:'.length).split('#')[0])
    }
    case 'object':
      return objectSchema(node, docId)
    case 'array':
      return described(node, { type: 'array', items: toJsonSchema(node.items as LexNode, docId) })
    case 'string': {
      const format = node.format === 'datetime' ? { format: 'date-time' } : {}
      return described(node, { type: 'string', ...format })
    }
    case 'integer':
    case 'boolean':
      return described(node, { type: node.type })
    case 'unknown':
      return described(node, {})
    default:
      throw new Error(`no JSON schema for the lexicon type ${node.type} in ${docId}`)
  }
}

/** The answer schema of `nsid`; `overrides` by dotted path where REST says more than lexicons. */
export function outputSchema(nsid: string, overrides: Record<string, Json> = {}): Json {
  const output = (queryOf(nsid) as LexXrpcQuery).output?.schema
  if (!output) throw new Error(`the query ${nsid} declares no output schema`)
  const schema = toJsonSchema(output as LexNode, nsid)
  for (const [path, value] of Object.entries(overrides)) {
    const names = path.split('.')
    const last = names.pop() as string
    let node = schema
    for (const name of names) node = (node.properties as Json)[name] as Json
    ;(node.properties as Json)[last] = value
  }
  return schema
}

/** The JSON schema of a definition of the lexicons (`nsid#name`), null admitted or not. */
export function defSchema(ref: string, nullable = false): Json {
  const schema = toJsonSchema({ type: 'ref', ref }, ref.split('#')[0])
  return nullable ? orNull(schema) : schema
}
