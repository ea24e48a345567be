import type { Logger } from 'pino'
import { type SourceCursor, seqCursor, valueOfKind } from '../../model/cursor.ts'
import { steadyNowMs } from '../../observe/clock.ts'
import {
  advanceSeqCursor,
  checkSourceTime,
  type RefusalReporter,
  type SeqTrack,
} from '../cursor-guard.ts'

// Jetstream v2's cursor policy: a seq resume is inclusive (the frame at the seq is sent again
// and dropped), duplicates and backwards seqs are dropped, and only a seq the cursor guard
// accepted (cursor-guard.ts) becomes what a reconnect resumes from.

type CursorDeps = { refused: RefusalReporter; fault: (reason: string) => void; logger: Logger }

const NO_TRACK: SeqTrack = { accepted: null, candidate: null }

export class V2Cursor {
  /** What a reconnect resumes from: the newest accepted seq, else the run's start `time_us`. */
  #resume: SourceCursor | null = null
  /** Highest seq of the current session: a lower one after it is out of order. */
  #sessionSeq: number | null = null
  #track: SeqTrack = NO_TRACK
  readonly #o: CursorDeps

  constructor(o: CursorDeps) {
    this.#o = o
  }

  /** A run starts here; a time_us start is no seq to continue from: the first seq is taken. */
  start(cursor: SourceCursor | null): void {
    this.#resume = cursor
    this.#track = { accepted: valueOfKind(cursor, 'seq'), candidate: null }
  }

  /** From the live tip (CursorTooOld with onTooOld=tip). */
  reset(): void {
    this.start(null)
  }

  newSession(): void {
    this.#sessionSeq = null
  }

  get resume(): SourceCursor | null {
    return this.#resume
  }

  /** The seq accepted as the cursor; null before the first one. */
  get accepted(): number | null {
    return this.#track.accepted
  }

  /** True when `seq` was handled already (inclusive resume, at-least-once delivery). */
  seen(seq: number): boolean {
    if (this.#sessionSeq !== null && seq < this.#sessionSeq) {
      this.#o.fault('seq_backwards')
      this.#o.logger.warn({ seq, after: this.#sessionSeq }, 'seq went backwards: frame skipped')
      return true
    }
    // Only a seq resume sends a handled frame again: a time_us one was translated by the server.
    const last = valueOfKind(this.#resume, 'seq')
    return last !== null && seq <= last
  }

  /** The shared cursor rule (cursor-guard.ts): a seq leap or a future time is refused. */
  position(seq: number, timeUs: number): { cursor: number | null; timeUs: number | null } {
    const adv = advanceSeqCursor(this.#track, seq)
    this.#track = adv.track
    if (adv.refusal) this.#o.refused(adv.refusal, { seq, cursor: this.#track.accepted })
    const timeRefusal = checkSourceTime(timeUs, steadyNowMs() * 1000)
    if (timeRefusal) this.#o.refused(timeRefusal, { seq, timeUs })
    return { cursor: adv.cursor, timeUs: timeRefusal ? null : timeUs }
  }

  /** A handled frame; a reconnect resumes only from an accepted seq, never a hostile one. */
  handled(seq: number, accepted: number | null): void {
    this.#sessionSeq = seq
    if (accepted !== null) this.#resume = seqCursor(accepted)
  }
}
