import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import {
  type CliProcess,
  startCli,
  startServing,
  waitFor,
  writeReplayFile,
} from '../helpers/cli.ts'

// The change subscription of a `serve` replica against commits of `ingest` processes on the
// same Postgres (SPEC 13: visible on every process within 500 ms of the commit). A
// subscriber on the replica must get every change, in seq order, equal to the replica's
// /v1/changes. Commit-to-frame delays are measured and logged: the test polls the change
// log every 5 ms and takes the moment a seq is first visible as its commit; the 500 ms is
// a bench target, so only a hang guard (HANG_MS) is asserted here.

const serverUrl = process.env.TEST_DATABASE_URL
const HANG_MS = 5_000

interface Line {
  seq: number
  op: string
  uri: string
}

describe.runIf(serverUrl)('change subscription on a serve replica', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pav-subscribe-'))
  const name = `pav_test_sub_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const url = new URL(serverUrl ?? 'postgres://x/y')
  url.pathname = `/${name}`
  const admin = postgres(serverUrl ?? '', { max: 1, onnotice: () => {} })
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} })
  const env = { DATABASE_URL: url.toString() }
  const children: CliProcess[] = []
  let watching = false
  let watcher: Promise<void> = Promise.resolve()
  afterAll(async () => {
    for (const c of children) c.child.kill('SIGKILL')
    watching = false
    await watcher
    await sql.end()
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
    rmSync(dir, { recursive: true, force: true })
  })

  /** Runs `ingest` over one replay file to its end (its cursor past the last event). */
  const ingest = async (file: string, lastUs: number, extra: Record<string, string> = {}) => {
    const p = startCli(['ingest'], {
      ...env,
      SOURCE: 'replay',
      REPLAY_FILE: file,
      PORT: '0',
      PLC_URL: 'http://127.0.0.1:1',
      ...extra,
    })
    children.push(p)
    await waitFor(
      'ingest to reach the end of its file',
      async () => {
        const [c] = await sql<
          { cursor: string }[]
        >`SELECT cursor FROM ingest_cursors WHERE key = ${file}`
        return c && Number(c.cursor) >= lastUs
      },
      120_000,
    )
    p.child.kill('SIGTERM')
    expect(await p.exited).toBe(0)
  }

  it('a subscriber on `serve` gets every change `ingest` commits, in order, and promptly', async () => {
    await admin.unsafe(`CREATE DATABASE ${name}`)
    expect(await startCli(['migrate'], env).exited).toBe(0)
    const serve = await startServing(['serve'], { ...env, RATE_LIMIT_PER_MINUTE: '10000000' })
    children.push(serve)
    await waitFor('serve ready', async () => (await fetch(`${serve.url}/readyz`)).ok)

    // When each seq became visible in the change log, seen from outside both processes.
    const visibleAt = new Map<number, number>()
    watching = true
    watcher = (async () => {
      let seen = 0
      while (watching) {
        const [{ max }] = await sql<{ max: string | null }[]>`SELECT max(seq) AS max FROM changes`
        const now = Date.now()
        for (let s = seen + 1; s <= Number(max ?? 0); s++) visibleAt.set(s, now)
        seen = Math.max(seen, Number(max ?? 0))
        await new Promise((r) => setTimeout(r, 25))
      }
    })()

    const frames: Line[] = []
    const frameAt = new Map<number, number>()
    const ws = new WebSocket(`${serve.url.replace('http', 'ws')}/v1/changes/subscribe?since=0`)
    ws.on('message', (data) => {
      const line = JSON.parse(String(data)) as Line
      frameAt.set(line.seq, Date.now())
      frames.push(line)
    })
    let closed: number | null = null
    ws.on('close', (code) => {
      closed = code
    })
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject))

    // A burst: 400 events in transactions of 10, as fast as `ingest` applies them
    // (no takedowns, so the feed read at the end shows every change the subscriber saw).
    const burst = join(dir, 'burst.ndjson')
    const burstEnd = writeReplayFile(burst, 400, { weights: { takedown: 0, purge: 0 } })
    await ingest(burst, burstEnd, { BATCH_SIZE: '10' })
    const burstSeqs = new Set(visibleAt.keys())
    // Then single commits on an idle replica: three more `ingest` runs of a few events.
    for (let i = 0; i < 3; i++) {
      const file = join(dir, `single-${i}.ndjson`)
      const end = writeReplayFile(file, 8, {
        seed: 100 + i,
        weights: { takedown: 0, purge: 0 },
      })
      await ingest(file, end)
    }

    const feed = async (): Promise<Line[]> => {
      const res = await fetch(`${serve.url}/v1/changes?since=0&limit=10000`)
      return (await res.text())
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Line)
    }
    const all = await feed()
    expect(all.length).toBeGreaterThan(100)
    await waitFor(
      'the subscriber to be current',
      async () => frames.at(-1)?.seq === all.at(-1)!.seq,
      10_000,
    )
    watching = false
    await watcher
    expect(closed).toBeNull()
    expect(frames).toEqual(all)
    ws.close()

    const delays = (seqs: number[]) =>
      seqs
        .filter((s) => frameAt.has(s) && visibleAt.has(s))
        .map((s) => frameAt.get(s)! - visibleAt.get(s)!)
        .sort((a, b) => a - b)
    const sent = all.map((l) => l.seq)
    const burstDelays = delays(sent.filter((s) => burstSeqs.has(s)))
    const idleDelays = delays(sent.filter((s) => !burstSeqs.has(s)))
    const pct = (d: number[], p: number) =>
      d[Math.min(d.length - 1, Math.floor((d.length * p) / 100))]
    const say = (d: number[]) =>
      `${d.length} changes: p50 ${pct(d, 50)} ms, p95 ${pct(d, 95)} ms, max ${d.at(-1)} ms`
    console.log(
      `commit-to-frame on the serve replica: burst (400 events, batches of 10) ${say(burstDelays)}; single commits ${say(idleDelays)}`,
    )
    expect(burstDelays.length + idleDelays.length).toBe(sent.length)
    expect(Math.max(...burstDelays, ...idleDelays)).toBeLessThan(HANG_MS)
  }, 300_000)
})
