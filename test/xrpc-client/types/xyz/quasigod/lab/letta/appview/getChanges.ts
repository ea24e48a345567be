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
const id = 'xyz.quasigod.lab.letta.appview.getChanges'

export type QueryParams = {
  /** The last seq read (0: from the start). */
  since?: number
  /** Most changes. */
  limit?: number
  /** record: each upsert carries its record (changeView.record). */
  include?: 'record' | (string & {})
}
export type InputSchema = undefined

export interface OutputSchema {
  changes: XyzQuasigodLabLettaAppviewDefs.ChangeView[]
  /** The seq to pass as since for the next page: past every change this page read, those of hidden repos it left out included (since itself when there was none). */
  cursor: number
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
