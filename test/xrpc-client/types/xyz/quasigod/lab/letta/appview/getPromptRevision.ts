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

const is$typed = _is$typed,
  validate = _validate
const id = 'xyz.quasigod.lab.letta.appview.getPromptRevision'

export type QueryParams = {
  /** DID or handle of the repo. */
  did: string
  /** Record key of the prompt (the TID its conversation shares). */
  rkey: string
  /** Revision (the commit rev, a TID). */
  rev: string
}
export type InputSchema = undefined

export interface OutputSchema {
  uri: string
  rev: string
  cid: string
  compiledAt: string | null
  rawSystemHash: string | null
  memfsRevision: string | null
  /** Lowercase hex SHA-256 of content. */
  contentHash: string | null
  seenAt: string
  /** What this revision changed since the one before it: template, memory, metadata (only the compile's metadata block) or other; template and memory may come together; [] for the oldest revision held; null when indexed before this was kept. */
  changed: (
    'template' | 'memory' | 'metadata' | 'other' | (string & {}) | null
  )[]
  /** The memory files whose blocks changed (memfs-v2 file names, memfs-v1 paths such as persona); [] when the memory did not change or cannot be read file by file; null when changed is. */
  memoryFiles: (string | null)[]
  /** false for revisions indexed before revision content was kept. */
  contentKept: boolean
  content: string | null
  coreMemory: string | null
  /** Why content is null, when it is. */
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
