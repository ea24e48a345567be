// The hub's frames, one log for all live subscribers (each an absolute index into it), with
// running byte counts per kind of frame so a subscriber's unsent bytes are a subtraction.

/** One change as the hub read it: its frame without and (when asked) with its record. */
export interface Frame {
  seq: number
  plain: string
  record: string | null
  /** Bytes of all frames of each kind appended up to this one. */
  plainEnd: number
  recordEnd: number
}

export class FrameLog {
  #frames: Frame[] = []
  /** Absolute index of #frames[0]. */
  #base = 0
  #plainBytes = 0
  #recordBytes = 0

  /** Absolute index after the last frame: where a subscriber going live starts. */
  get end(): number {
    return this.#base + this.#frames.length
  }

  /** Bytes of every frame of that kind ever appended. */
  bytes(withRecords: boolean): number {
    return withRecords ? this.#recordBytes : this.#plainBytes
  }

  at(index: number): Frame {
    return this.#frames[index - this.#base]
  }

  push(seq: number, plain: string, record: string | null): void {
    this.#plainBytes += Buffer.byteLength(plain)
    if (record !== null) this.#recordBytes += Buffer.byteLength(record)
    this.#frames.push({
      seq,
      plain,
      record,
      plainEnd: this.#plainBytes,
      recordEnd: this.#recordBytes,
    })
  }

  dropBefore(index: number): void {
    const drop = index - this.#base
    if (drop <= 0) return
    this.#frames.splice(0, drop)
    this.#base = index
  }
}
