import { afterEach } from 'vitest'
import type { Source } from '../../src/ingest/source.ts'
import type { SourceCursor } from '../../src/model/cursor.ts'
import { collectingSink } from './ingest-kit.ts'

// What a source test opens (servers, running sources) is closed after each test, newest first.

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

export function onCleanup(fn: () => unknown): void {
  cleanups.push(fn)
}

/** A collecting sink for `source`, and `start(cursor)` that runs it until the test ends. */
export function sourceRun(source: Source) {
  const ac = new AbortController()
  const sink = collectingSink()
  const start = (cursor: SourceCursor | null) => {
    const done = source.run(sink, cursor, ac.signal)
    onCleanup(() => {
      ac.abort()
      return done.catch(() => {})
    })
    return done
  }
  return { sink, ac, start }
}
