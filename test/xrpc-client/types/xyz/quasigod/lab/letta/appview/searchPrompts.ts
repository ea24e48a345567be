/**
 * GENERATED CODE - DO NOT MODIFY
 */
import { type HeadersMap, XRPCError } from '@atproto/xrpc'
import { type ValidationResult, BlobRef } from '@atproto/lexicon'
import { CID } from 'multiformats/cid'
import { validate as _validate } from '../../../../../../lexicons.js'
import {
  type $Typed,
  is$typed as _is$typed,
  type OmitKey,
} from '../../../../../../util.js'
import type * as XyzQuasigodLabLettaAppviewDefs from './defs.js'

const is$typed = _is$typed,
  validate = _validate
const id = 'xyz.quasigod.lab.letta.appview.searchPrompts'

export type QueryParams = {
  /** Words to find (at most 16). */
  q: string
  /** Only prompts with this flag set; ok: only prompts with none. */
  flag?:
    | 'orphaned'
    | 'mismatched'
    | 'staleTemplate'
    | 'staleMemory'
    | 'coreMemoryDetached'
    | 'invalid'
    | 'ok'
  /** Only prompts of this repo (DID or handle). */
  did?: string
  /** Only prompts naming this agent record. */
  agent?: string
  /** Order of the page: created, by rkey descending (a TID rkey is its creation time), then did; the others by their key descending, then did and rkey descending: compiled, newest compiledAt first (absent or not a datetime last); indexed, the time this index stored the current version, newest first; recompiles, most recompiles first; size, largest content (UTF-8 bytes) first (no content last). A cursor continues the order it was made in. */
  sort?: 'created' | 'compiled' | 'indexed' | 'recompiles' | 'size'
  /** Page size. */
  limit?: number
  /** Opaque cursor of the previous page. */
  cursor?: string
}
export type InputSchema = undefined

export interface OutputSchema {
  items: XyzQuasigodLabLettaAppviewDefs.SearchItem[]
  /** Pass back for the next page; absent on the last page. */
  cursor?: string
}

export interface CallOptions {
  signal?: AbortSignal
  headers?: HeadersMap
}

export interface Response {
  success: boolean
  headers: HeadersMap
  data: OutputSchema
}

export function toKnownErr(e: any) {
  return e
}
