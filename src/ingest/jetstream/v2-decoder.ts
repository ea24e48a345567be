import type { Logger } from 'pino'
import type { Metrics } from '../../observe/metrics.ts'
import {
  decodeZstdFrame,
  fetchZstdDictionary,
  type ZstdDictionary,
  ZstdFrameError,
} from './v2-zstd.ts'

// Jetstream v2's decoder: a message's text, from a text frame or a dictionary zstd frame.
// It owns the dictionary: fetched before a connection asks for it, fetched again once when
// the server retires it, and given up for text frames when that fails (v2-zstd.ts).

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
