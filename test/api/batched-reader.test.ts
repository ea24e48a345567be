import { describe, expect, it } from 'vitest'
import { batchedReader } from '../../src/db/read/batch.ts'

// db/read/batch.ts on its own: which keys go together, how many statements run at once,
// and what a failed batch does. readMany is a stand-in that records its batches and
// answers when the test says so, so every batch boundary here is exact.

interface Call {
  keys: readonly string[]
  finish: (fail?: Error) => void
}

function recorder() {
  const calls: Call[] = []
  let running = 0
  let mostRunning = 0
  const readMany = (keys: readonly string[]) =>
    new Promise<string[]>((resolve, reject) => {
      running++
      mostRunning = Math.max(mostRunning, running)
      calls.push({
        keys: [...keys],
        finish: (fail) => {
          running--
          if (fail) reject(fail)
          else resolve(keys.map((k) => `value of ${k}`))
        },
      })
    })
  return { calls, readMany, mostRunning: () => mostRunning }
}

/** Lets every pending turn of the event loop run (dispatches go on setImmediate). */
const turns = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

describe('batchedReader', () => {
  it('sends the keys of one turn together, up to maxBatch a batch, inFlight at once', async () => {
    const r = recorder()
    const read = batchedReader(r.readMany, { maxBatch: 16, inFlight: 2 })
    const keys = Array.from({ length: 40 }, (_, i) => `k${i}`)
    const answers = Promise.all(keys.map(read))
    await turns()
    // Two batches run; the third waits for one of them.
    expect(r.calls.map((c) => c.keys.length)).toEqual([16, 16])
    r.calls[0].finish()
    await turns()
    expect(r.calls.map((c) => c.keys)).toEqual([
      keys.slice(0, 16),
      keys.slice(16, 32),
      keys.slice(32),
    ])
    r.calls[1].finish()
    r.calls[2].finish()
    expect(await answers).toEqual(keys.map((k) => `value of ${k}`))
    expect(r.mostRunning()).toBe(2)
  })

  it('a lone key goes at once; keys that come while every slot is busy wait and go together', async () => {
    const r = recorder()
    const read = batchedReader(r.readMany, { maxBatch: 16, inFlight: 1 })
    const first = read('a')
    await turns()
    expect(r.calls.map((c) => c.keys)).toEqual([['a']])
    const later = ['b', 'c', 'd'].map(read)
    await turns()
    const more = read('e')
    await turns()
    expect(r.calls).toHaveLength(1)
    r.calls[0].finish()
    expect(await first).toBe('value of a')
    await turns()
    expect(r.calls.map((c) => c.keys)).toEqual([['a'], ['b', 'c', 'd', 'e']])
    r.calls[1].finish()
    expect(await Promise.all([...later, more])).toEqual(
      ['b', 'c', 'd', 'e'].map((k) => `value of ${k}`),
    )
  })

  it('a key asked twice in one batch is read, and answered, twice', async () => {
    const r = recorder()
    const read = batchedReader(r.readMany, { maxBatch: 16, inFlight: 1 })
    const both = Promise.all([read('x'), read('x')])
    await turns()
    expect(r.calls[0].keys).toEqual(['x', 'x'])
    r.calls[0].finish()
    expect(await both).toEqual(['value of x', 'value of x'])
  })

  it('a failed batch rejects each of its keys with its error and frees its slot', async () => {
    const r = recorder()
    const read = batchedReader(r.readMany, { maxBatch: 2, inFlight: 1 })
    const failing = [read('p'), read('q')].map((p) =>
      p.then(
        () => 'answered',
        (e: unknown) => e,
      ),
    )
    const after = read('s')
    await turns()
    const err = Object.assign(new Error('connection lost'), { code: 'ECONNRESET' })
    r.calls[0].finish(err)
    // The same error object, so a retryable database error still answers 503.
    expect(await Promise.all(failing)).toEqual([err, err])
    expect((await failing[0]) === err).toBe(true)
    await turns()
    expect(r.calls.map((c) => c.keys)).toEqual([['p', 'q'], ['s']])
    r.calls[1].finish()
    expect(await after).toBe('value of s')
  })

  it('a batch answering the wrong number of values fails its own keys only', async () => {
    const read = batchedReader(
      async (keys: readonly string[]) => (keys.includes('bad') ? keys.slice(1) : [...keys]),
      { maxBatch: 16, inFlight: 1 },
    )
    await expect(read('bad')).rejects.toThrow(/same length as the Array of keys/)
    expect(await read('fine')).toBe('fine')
  })
})
