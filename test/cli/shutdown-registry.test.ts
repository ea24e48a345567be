import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { createShutdown, ShutdownError } from '../../src/cli/shutdown.ts'

// The one shutdown registry: what was opened last closes first, a failing step does not keep
// the rest open, a stuck one is abandoned at the deadline, and closing happens once.

const logger = pino({ level: 'silent' })

describe('shutdown registry', () => {
  it('closes in reverse order of registration, once', async () => {
    const s = createShutdown(logger)
    const order: string[] = []
    for (const name of ['database', 'http server', 'ingest'])
      s.add(name, async () => {
        order.push(name)
      })
    expect(s.closing).toBe(false)
    const first = s.close()
    expect(s.close()).toBe(first)
    await first
    expect(s.closing).toBe(true)
    expect(order).toEqual(['ingest', 'http server', 'database'])
  })

  it('closes the rest when a step fails, then rejects naming it', async () => {
    const s = createShutdown(logger)
    const order: string[] = []
    s.add('database', () => {
      order.push('database')
    })
    s.add('http server', () => {
      throw new Error('boom')
    })
    s.add('ingest', () => {
      order.push('ingest')
    })
    await expect(s.close()).rejects.toThrow(new ShutdownError('closing failed: http server'))
    expect(order).toEqual(['ingest', 'database'])
  })

  it('abandons a step stuck past the deadline and says which', async () => {
    const s = createShutdown(logger, 50)
    const order: string[] = []
    s.add('database', () => {
      order.push('database')
    })
    s.add('stuck', () => new Promise(() => {}))
    await expect(s.close()).rejects.toThrow('closing stuck took longer than 50 ms')
    expect(order).toEqual([])
  })

  it('closes at once what is opened after closing began', async () => {
    const s = createShutdown(logger)
    await s.close()
    let closed = false
    s.add('late', () => {
      closed = true
    })
    expect(closed).toBe(true)
  })
})
