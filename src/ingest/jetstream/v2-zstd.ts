import { zstdDecompressSync } from 'node:zlib'
import type { Logger } from 'pino'
import { UpstreamError } from '../../faults/errors.ts'
import type { Metrics } from '../../observe/metrics.ts'

// Dictionary zstd of Jetstream v2 (notes/jetstream-v2.md section 8). Node 24's built-in
// zlib decodes dictionary frames (PR #59240; `fzstd` returns garbage for them, never use it).

const DICT_MAGIC = 0xec30a437
const FRAME_MAGIC = 0xfd2fb528
// Jetstream's dictionary is 64 KiB; anything far larger is not a dictionary.
const MAX_DICTIONARY_BYTES = 1 << 20

export interface ZstdDictionary {
  id: number
  bytes: Buffer
}

/** Why a binary frame could not be read: each is counted under its own reason. */
export class ZstdFrameError extends Error {
  readonly reason: 'zstd_cap' | 'zstd_dictionary' | 'zstd_corrupt'
  constructor(reason: ZstdFrameError['reason'], message: string, cause?: unknown) {
    super(message, { cause })
    this.name = 'ZstdFrameError'
    this.reason = reason
  }
}

/** The ID of a structured zstd dictionary (RFC 8878 section 5), or null if it is not one. */
export function dictionaryIdOf(bytes: Uint8Array): number | null {
  if (bytes.length < 8) return null
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  return view.readUInt32LE(0) === DICT_MAGIC ? view.readUInt32LE(4) : null
}

/** The dictionary ID a zstd frame header names (0 = none), or null if it is not a frame. */
export function frameDictionaryId(buf: Buffer): number | null {
  if (buf.length < 5 || buf.readUInt32LE(0) !== FRAME_MAGIC) return null
  const fhd = buf[4]
  const idSize = [0, 1, 2, 4][fhd & 3]
  const singleSegment = (fhd >> 5) & 1
  const at = 5 + (singleSegment ? 0 : 1)
  if (buf.length < at + idSize) return null
  if (idSize === 0) return 0
  if (idSize === 1) return buf[at]
  return idSize === 2 ? buf.readUInt16LE(at) : buf.readUInt32LE(at)
}

/** `ws(s)://host/xrpc/…subscribeEvents` → `http(s)://host/xrpc/…getZstdDictionary`. */
export function dictionaryUrl(subscribeUrl: string): string {
  const u = new URL(subscribeUrl)
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:'
  u.pathname = u.pathname.replace(/[^/]*$/, 'network.bsky.jetstream.getZstdDictionary')
  u.search = ''
  return u.toString()
}

/** Fetches the current dictionary and checks it is the structured dictionary it claims to be. */
export async function fetchZstdDictionary(
  subscribeUrl: string,
  opts: { fetch?: typeof fetch; timeoutMs?: number } = {},
): Promise<ZstdDictionary> {
  const url = dictionaryUrl(subscribeUrl)
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 10_000)
  const res = await (opts.fetch ?? fetch)(url, { signal }).catch((err: Error) => {
    throw new UpstreamError(`getZstdDictionary failed: ${err.message}`, { cause: err })
  })
  if (res.status !== 200) {
    await res.body?.cancel()
    throw new UpstreamError(`getZstdDictionary answered ${res.status}`)
  }
  const length = Number(res.headers.get('content-length') ?? 0)
  if (length > MAX_DICTIONARY_BYTES) {
    await res.body?.cancel()
    throw new UpstreamError(`getZstdDictionary: ${length} bytes is not a dictionary`)
  }
  const bytes = Buffer.from(await res.arrayBuffer())
  const id = dictionaryIdOf(bytes)
  if (bytes.length > MAX_DICTIONARY_BYTES || id === null || id === 0)
    throw new UpstreamError('getZstdDictionary: not a structured zstd dictionary (bad magic)')
  const header = res.headers.get('x-zstd-dictionary-id')
  if (header !== null && Number(header) !== id)
    throw new UpstreamError(`getZstdDictionary: header says ID ${header}, the dictionary is ${id}`)
  return { id, bytes }
}

/** One binary frame → its JSON text; never more than `maxBytes` of output. */
export function decodeZstdFrame(buf: Buffer, dict: ZstdDictionary, maxBytes: number): string {
  const named = frameDictionaryId(buf)
  if (named === null) throw new ZstdFrameError('zstd_corrupt', 'binary frame is not a zstd frame')
  // Decoding with another dictionary can "succeed" with wrong bytes for some dictionaries:
  // the frame header says which one it was made with, so check before trusting the output.
  if (named !== 0 && named !== dict.id)
    throw new ZstdFrameError(
      'zstd_dictionary',
      `frame uses dictionary ${named}, we hold ${dict.id}`,
    )
  try {
    return zstdDecompressSync(buf, { dictionary: dict.bytes, maxOutputLength: maxBytes }).toString()
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'ERR_BUFFER_TOO_LARGE')
      throw new ZstdFrameError('zstd_cap', `frame decodes past ${maxBytes} bytes`, err)
    if (code === 'ZSTD_error_dictionary_wrong')
      throw new ZstdFrameError('zstd_dictionary', 'frame needs another dictionary', err)
    throw new ZstdFrameError('zstd_corrupt', `zstd: ${(err as Error).message}`, err)
  }
}

// Jetstream v2's decoder: a message's text, from a text frame or a dictionary zstd frame. It
// owns the dictionary: fetched before a connection asks for it, again once when the server
// retires it, and given up for text frames when that fails.

/** A decoded message's text, a message skipped, or the end of the connection. */
export type Decoded =
  | { text: string }
  | { skip: true }
  /** The frame named a dictionary we do not hold: the connection must end (and refetch). */
  | { end: { error: 'UnknownZstdDictionary'; message: string } }

export interface V2DecoderOptions {
  url: string
  /** Ask for dictionary zstd frames (default true); falls back to text when that fails. */
  zstd: boolean
  maxDecodedBytes: number
  logger: Logger
  metrics: Metrics
  fault: (reason: string) => void
  fetch?: typeof fetch
}

export class V2Decoder {
  readonly #o: V2DecoderOptions
  #dictionary: ZstdDictionary | null = null
  #zstd: 'want' | 'off'
  #refetched = false

  constructor(o: V2DecoderOptions) {
    this.#o = o
    this.#zstd = o.zstd ? 'want' : 'off'
  }

  /** The dictionary the next connection asks for, null for text frames. */
  get dictionaryId(): number | null {
    return this.#dictionary?.id ?? null
  }

  /** Fetches the dictionary when zstd is wanted and none is held; text frames if it fails. */
  async load(): Promise<void> {
    if (this.#zstd === 'off' || this.#dictionary) return
    try {
      this.#dictionary = await fetchZstdDictionary(this.#o.url, { fetch: this.#o.fetch })
      this.#o.logger.info({ dictionaryId: this.#dictionary.id }, 'zstd dictionary loaded')
    } catch (err) {
      this.#o.fault('zstd_dictionary_fetch')
      this.#o.logger.warn({ err }, 'no zstd dictionary: falling back to text frames')
      this.#zstd = 'off'
    }
  }

  /** The server does not know our dictionary: fetch the current one once, then text frames. */
  refused(message: string): void {
    this.#o.fault('zstd_dictionary_unknown')
    this.#dictionary = null
    if (this.#refetched) {
      this.#zstd = 'off'
      this.#o.logger.warn({ message }, 'zstd dictionary refused again: falling back to text frames')
    } else {
      this.#refetched = true
      this.#o.logger.info({ message }, 'zstd dictionary retired upstream: fetching the current one')
    }
  }

  /** A healthy session starts the refetch allowance over. */
  healthy(): void {
    this.#refetched = false
  }

  decode(data: Buffer, binary: boolean): Decoded {
    const { metrics, logger, fault } = this.#o
    metrics.jetstreamBytesTotal.inc({ stage: 'wire' }, data.length)
    if (!binary) {
      metrics.jetstreamBytesTotal.inc({ stage: 'decoded' }, data.length)
      return { text: data.toString('utf8') }
    }
    if (!this.#dictionary) {
      fault('zstd_unexpected')
      logger.warn({ bytes: data.length }, 'binary frame without a zstd dictionary: skipped')
      return { skip: true }
    }
    try {
      const text = decodeZstdFrame(data, this.#dictionary, this.#o.maxDecodedBytes)
      metrics.jetstreamBytesTotal.inc({ stage: 'decoded' }, Buffer.byteLength(text))
      return { text }
    } catch (err) {
      if (!(err instanceof ZstdFrameError)) throw err
      fault(err.reason)
      logger.warn({ err, bytes: data.length }, `undecodable zstd frame (${err.reason})`)
      if (err.reason !== 'zstd_dictionary') return { skip: true }
      return { end: { error: 'UnknownZstdDictionary', message: err.message } }
    }
  }
}
