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
const id = 'xyz.quasigod.lab.letta.appview.getPromptDiff'

export type QueryParams = {
  /** DID or handle of the repo. */
  did: string
  /** Record key of the prompt (the TID its conversation shares). */
  rkey: string
  /** Older revision (default: the one before to). */
  from?: string
  /** Newer revision (default: the newest). */
  to?: string
}
export type InputSchema = undefined

export interface OutputSchema {
  uri: string
  /** null: diffed against nothing (the first revision). */
  from: string | null
  to: string
  /** What changed from from to to: template, memory, metadata or other, as on a revision; [] when from is null. */
  changed: ('template' | 'memory' | 'metadata' | 'other' | (string & {}))[]
  /** The memory files whose blocks differ. */
  memoryFiles: string[]
  /** null when the content of either revision is not available (see note). */
  content: (XyzQuasigodLabLettaAppviewDefs.Hunk | null)[]
  coreMemory: (XyzQuasigodLabLettaAppviewDefs.Hunk | null)[]
  parts: XyzQuasigodLabLettaAppviewDefs.DiffParts | null
  note: string | null
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

export class NotFoundError extends XRPCError {
  constructor(src: XRPCError) {
    super(src.status, src.error, src.message, src.headers, { cause: src })
  }
}

export function toKnownErr(e: any) {
  if (e instanceof XRPCError) {
    if (e.error === 'NotFound') return new NotFoundError(e)
  }

  return e
}
