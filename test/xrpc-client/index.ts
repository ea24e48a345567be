/**
 * GENERATED CODE - DO NOT MODIFY
 */
import {
  XrpcClient,
  type FetchHandler,
  type FetchHandlerOptions,
} from '@atproto/xrpc'
import { schemas } from './lexicons.js'
import { CID } from 'multiformats/cid'
import { type OmitKey, type Un$Typed } from './util.js'
import * as XyzQuasigodLabLettaAppviewDefs from './types/xyz/quasigod/lab/letta/appview/defs.js'
import * as XyzQuasigodLabLettaAppviewGetAgent from './types/xyz/quasigod/lab/letta/appview/getAgent.js'
import * as XyzQuasigodLabLettaAppviewGetChanges from './types/xyz/quasigod/lab/letta/appview/getChanges.js'
import * as XyzQuasigodLabLettaAppviewGetConversation from './types/xyz/quasigod/lab/letta/appview/getConversation.js'
import * as XyzQuasigodLabLettaAppviewGetPrompt from './types/xyz/quasigod/lab/letta/appview/getPrompt.js'
import * as XyzQuasigodLabLettaAppviewGetPromptByUri from './types/xyz/quasigod/lab/letta/appview/getPromptByUri.js'
import * as XyzQuasigodLabLettaAppviewGetPromptDiff from './types/xyz/quasigod/lab/letta/appview/getPromptDiff.js'
import * as XyzQuasigodLabLettaAppviewGetPromptRevision from './types/xyz/quasigod/lab/letta/appview/getPromptRevision.js'
import * as XyzQuasigodLabLettaAppviewGetPromptRevisions from './types/xyz/quasigod/lab/letta/appview/getPromptRevisions.js'
import * as XyzQuasigodLabLettaAppviewGetRepo from './types/xyz/quasigod/lab/letta/appview/getRepo.js'
import * as XyzQuasigodLabLettaAppviewGetStats from './types/xyz/quasigod/lab/letta/appview/getStats.js'
import * as XyzQuasigodLabLettaAppviewListPrompts from './types/xyz/quasigod/lab/letta/appview/listPrompts.js'
import * as XyzQuasigodLabLettaAppviewSearchPrompts from './types/xyz/quasigod/lab/letta/appview/searchPrompts.js'

export * as XyzQuasigodLabLettaAppviewDefs from './types/xyz/quasigod/lab/letta/appview/defs.js'
export * as XyzQuasigodLabLettaAppviewGetAgent from './types/xyz/quasigod/lab/letta/appview/getAgent.js'
export * as XyzQuasigodLabLettaAppviewGetChanges from './types/xyz/quasigod/lab/letta/appview/getChanges.js'
export * as XyzQuasigodLabLettaAppviewGetConversation from './types/xyz/quasigod/lab/letta/appview/getConversation.js'
export * as XyzQuasigodLabLettaAppviewGetPrompt from './types/xyz/quasigod/lab/letta/appview/getPrompt.js'
export * as XyzQuasigodLabLettaAppviewGetPromptByUri from './types/xyz/quasigod/lab/letta/appview/getPromptByUri.js'
export * as XyzQuasigodLabLettaAppviewGetPromptDiff from './types/xyz/quasigod/lab/letta/appview/getPromptDiff.js'
export * as XyzQuasigodLabLettaAppviewGetPromptRevision from './types/xyz/quasigod/lab/letta/appview/getPromptRevision.js'
export * as XyzQuasigodLabLettaAppviewGetPromptRevisions from './types/xyz/quasigod/lab/letta/appview/getPromptRevisions.js'
export * as XyzQuasigodLabLettaAppviewGetRepo from './types/xyz/quasigod/lab/letta/appview/getRepo.js'
export * as XyzQuasigodLabLettaAppviewGetStats from './types/xyz/quasigod/lab/letta/appview/getStats.js'
export * as XyzQuasigodLabLettaAppviewListPrompts from './types/xyz/quasigod/lab/letta/appview/listPrompts.js'
export * as XyzQuasigodLabLettaAppviewSearchPrompts from './types/xyz/quasigod/lab/letta/appview/searchPrompts.js'

export class AtpBaseClient extends XrpcClient {
  xyz: XyzNS

  constructor(options: FetchHandler | FetchHandlerOptions) {
    super(options, schemas)
    this.xyz = new XyzNS(this)
  }

  /** @deprecated use `this` instead */
  get xrpc(): XrpcClient {
    return this
  }
}

export class XyzNS {
  _client: XrpcClient
  quasigod: XyzQuasigodNS

  constructor(client: XrpcClient) {
    this._client = client
    this.quasigod = new XyzQuasigodNS(client)
  }
}

export class XyzQuasigodNS {
  _client: XrpcClient
  lab: XyzQuasigodLabNS

  constructor(client: XrpcClient) {
    this._client = client
    this.lab = new XyzQuasigodLabNS(client)
  }
}

export class XyzQuasigodLabNS {
  _client: XrpcClient
  letta: XyzQuasigodLabLettaNS

  constructor(client: XrpcClient) {
    this._client = client
    this.letta = new XyzQuasigodLabLettaNS(client)
  }
}

export class XyzQuasigodLabLettaNS {
  _client: XrpcClient
  appview: XyzQuasigodLabLettaAppviewNS

  constructor(client: XrpcClient) {
    this._client = client
    this.appview = new XyzQuasigodLabLettaAppviewNS(client)
  }
}

export class XyzQuasigodLabLettaAppviewNS {
  _client: XrpcClient

  constructor(client: XrpcClient) {
    this._client = client
  }

  getAgent(
    params?: XyzQuasigodLabLettaAppviewGetAgent.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewGetAgent.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewGetAgent.Response> {
    return this._client
      .call('xyz.quasigod.lab.letta.appview.getAgent', params, undefined, opts)
      .catch((e) => {
        throw XyzQuasigodLabLettaAppviewGetAgent.toKnownErr(e)
      })
  }

  getChanges(
    params?: XyzQuasigodLabLettaAppviewGetChanges.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewGetChanges.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewGetChanges.Response> {
    return this._client.call(
      'xyz.quasigod.lab.letta.appview.getChanges',
      params,
      undefined,
      opts,
    )
  }

  getConversation(
    params?: XyzQuasigodLabLettaAppviewGetConversation.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewGetConversation.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewGetConversation.Response> {
    return this._client
      .call(
        'xyz.quasigod.lab.letta.appview.getConversation',
        params,
        undefined,
        opts,
      )
      .catch((e) => {
        throw XyzQuasigodLabLettaAppviewGetConversation.toKnownErr(e)
      })
  }

  getPrompt(
    params?: XyzQuasigodLabLettaAppviewGetPrompt.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewGetPrompt.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewGetPrompt.Response> {
    return this._client
      .call('xyz.quasigod.lab.letta.appview.getPrompt', params, undefined, opts)
      .catch((e) => {
        throw XyzQuasigodLabLettaAppviewGetPrompt.toKnownErr(e)
      })
  }

  getPromptByUri(
    params?: XyzQuasigodLabLettaAppviewGetPromptByUri.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewGetPromptByUri.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewGetPromptByUri.Response> {
    return this._client
      .call(
        'xyz.quasigod.lab.letta.appview.getPromptByUri',
        params,
        undefined,
        opts,
      )
      .catch((e) => {
        throw XyzQuasigodLabLettaAppviewGetPromptByUri.toKnownErr(e)
      })
  }

  getPromptDiff(
    params?: XyzQuasigodLabLettaAppviewGetPromptDiff.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewGetPromptDiff.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewGetPromptDiff.Response> {
    return this._client
      .call(
        'xyz.quasigod.lab.letta.appview.getPromptDiff',
        params,
        undefined,
        opts,
      )
      .catch((e) => {
        throw XyzQuasigodLabLettaAppviewGetPromptDiff.toKnownErr(e)
      })
  }

  getPromptRevision(
    params?: XyzQuasigodLabLettaAppviewGetPromptRevision.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewGetPromptRevision.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewGetPromptRevision.Response> {
    return this._client
      .call(
        'xyz.quasigod.lab.letta.appview.getPromptRevision',
        params,
        undefined,
        opts,
      )
      .catch((e) => {
        throw XyzQuasigodLabLettaAppviewGetPromptRevision.toKnownErr(e)
      })
  }

  getPromptRevisions(
    params?: XyzQuasigodLabLettaAppviewGetPromptRevisions.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewGetPromptRevisions.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewGetPromptRevisions.Response> {
    return this._client
      .call(
        'xyz.quasigod.lab.letta.appview.getPromptRevisions',
        params,
        undefined,
        opts,
      )
      .catch((e) => {
        throw XyzQuasigodLabLettaAppviewGetPromptRevisions.toKnownErr(e)
      })
  }

  getRepo(
    params?: XyzQuasigodLabLettaAppviewGetRepo.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewGetRepo.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewGetRepo.Response> {
    return this._client
      .call('xyz.quasigod.lab.letta.appview.getRepo', params, undefined, opts)
      .catch((e) => {
        throw XyzQuasigodLabLettaAppviewGetRepo.toKnownErr(e)
      })
  }

  getStats(
    params?: XyzQuasigodLabLettaAppviewGetStats.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewGetStats.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewGetStats.Response> {
    return this._client.call(
      'xyz.quasigod.lab.letta.appview.getStats',
      params,
      undefined,
      opts,
    )
  }

  listPrompts(
    params?: XyzQuasigodLabLettaAppviewListPrompts.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewListPrompts.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewListPrompts.Response> {
    return this._client.call(
      'xyz.quasigod.lab.letta.appview.listPrompts',
      params,
      undefined,
      opts,
    )
  }

  searchPrompts(
    params?: XyzQuasigodLabLettaAppviewSearchPrompts.QueryParams,
    opts?: XyzQuasigodLabLettaAppviewSearchPrompts.CallOptions,
  ): Promise<XyzQuasigodLabLettaAppviewSearchPrompts.Response> {
    return this._client.call(
      'xyz.quasigod.lab.letta.appview.searchPrompts',
      params,
      undefined,
      opts,
    )
  }
}
