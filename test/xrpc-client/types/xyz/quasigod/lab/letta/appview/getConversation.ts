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
const id = 'xyz.quasigod.lab.letta.appview.getConversation'

export type QueryParams = {
  /** DID or handle of the repo. */
  did: string
  /** Record key of the conversation. */
  rkey: string
}
export type InputSchema = undefined

export interface OutputSchema {
  uri: string
  cid: string
  did: string
  rkey: string
  /** The record as published. */
  record: { [_ in string]: unknown }
  prompt: XyzQuasigodLabLettaAppviewDefs.ConversationPrompt | null
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
