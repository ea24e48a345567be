import postgres from 'postgres'
import WebSocket from 'ws'
import { startPgCluster } from '../../helpers/pg-cluster.ts'
import type { ChangeRow } from '../lib/api-read.ts'
import { COMMON_ENV, replayArgs } from '../lib/baseline.ts'
import { type CliProc, describeExit, sleep, startCli, tail } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import { readDigest } from '../lib/digest.ts'
import { readCursor, waitCaughtUp } from '../lib/progress.ts'
import { sweepProblems, sweepReads } from '../lib/read-sweep.ts'
import type { Scenario } from '../lib/scenario.ts'
import { percentOf } from './kill9.ts'

// The database crashes under a running `run`: a private cluster stopped with
// `pg_ctl stop -m immediate` at random points of the ingestion and started again after a
// random pause. The process must live through it (SPEC 11), answer /readyz and reads with
// 503 while the database is away, answer every read (no 5xx) once /readyz says 200 again,
// and end in the uninterrupted run's state. Last, every backend is terminated under running
// reads, and again every read must answer. A subscriber of /v1/changes/subscribe is
// connected across it all: it stays connected and gets every change afterwards, or is
// closed with a reason frame and resumes by seq (refused with a 503 while the database is
// away); either way it ends with the feed's changes, each once, in order.

// Small batches make the ingestion long enough to be hit several times, and the short
// run's fewer events smaller ones still, so more outages land on a transaction in flight.
// (On an idle Postgres the replay still outruns the last target now and then: the note
// then says "at cursor 100%", an outage of an idle process.)
const batchSize = (short: boolean) => (short ? '10' : '25')

export const pgOutageScenario: Scenario = {
  name: 'pg-outage',
  short: true,
  injects: 'pg_ctl stop -m immediate on a private cluster mid-ingest, start it again',
  async run(ctx, shared) {
    const base = await shared.baseline('postgres')
    const cluster = await startPgCluster()
    ctx.defer(`remove the private cluster on port ${cluster.port}`, () => cluster.destroy())
    const env = { ...COMMON_ENV, DATABASE_URL: cluster.url, BATCH_SIZE: batchSize(ctx.short) }
    const outages = ctx.short ? 3 : 8
    const span = percentOf(base.set.events[0].time_us, base.set.lastTimeUs)
    const first = base.set.events[0].time_us
    const targets = Array.from({ length: outages }, () => 0.05 + ctx.rand.next() * 0.85).sort()
    const failures: string[] = []
    let p = startCli(replayArgs(base.file), env)
    ctx.defer('stop the product', () => void p.kill9())
    await p.waitListening()
    const sub = follow(
      () => p.url(),
      () => p.exit() === null,
    )
    ctx.defer('stop the subscriber', () => sub.stop())
    let died = 0
    for (const [i, t] of targets.entries()) {
      const target = first + t * (base.set.lastTimeUs - first)
      const at = await waitCursor(p, target)
      const pauseMs = ctx.rand.int(300, ctx.short ? 1_500 : 5_000)
      await cluster.stopImmediate()
      const probe = await probeOutage(p, pauseMs)
      await cluster.start()
      const after = await readsOnceReady(p, base.fine.records.keys())
      const exit = p.exit()
      ctx.note(
        `outage #${i + 1} at cursor ${at === null ? '?' : span(at)} for ${pauseMs} ms: ${probe.text}; ${after.text}; process ${exit ? `DIED (${describeExit(exit)})` : 'alive'}`,
      )
      failures.push(...probe.failures.map((f) => `outage #${i + 1}: ${f}`))
      failures.push(...after.failures.map((f) => `outage #${i + 1}: ${f}`))
      if (exit) {
        died++
        failures.push(
          `outage #${i + 1}: the process exited (${describeExit(exit)}):\n${tail(p.output(), 6)}`,
        )
        p = startCli(replayArgs(base.file), env)
        await p.waitListening()
      }
    }
    // The administrator's kill: every backend of the product terminated while its reads run
    // (what an outage does to the busy connections), then every read again.
    const killed = await terminateUnderReads(cluster.url, p, base.fine.records.keys())
    ctx.note(killed.text)
    failures.push(...killed.failures)
    // The digest below reads through getJson, which throws on a 5xx: say what failed first.
    if (killed.failures.length > 0)
      return { failures, figures: `${outages} outages, reads failed after the kill` }
    await waitCaughtUp(p, base.set.lastTimeUs, 180_000)
    const got = await readDigest(p.url()!, base.fine.records.keys())
    const cmp = compareDigests(got, base.fine, base.fine.feed)
    ctx.note(`after ${outages} outages: ${cmp.summary}`)
    failures.push(...cmp.problems)
    const followed = await sub.settle(got.feed, takenDown(base.set.events))
    ctx.note(followed.text)
    failures.push(...followed.failures)
    const ready = await fetch(`${p.url()}/readyz`)
    if (ready.status !== 200) failures.push(`/readyz ${ready.status} after recovery`)
    const code = await p.stop()
    if (code !== 0) failures.push(`SIGTERM exit code ${code}`)
    return { failures, figures: `${outages} outages, process died in ${died}, digest ${got.hash}` }
  },
}

async function waitCursor(p: CliProc, target: number): Promise<number | null> {
  const deadline = Date.now() + 120_000
  let c: number | null = null
  while (Date.now() < deadline && !p.exit()) {
    c = await readCursor(p)
    if (c !== null && c >= target) return c
    await sleep(20)
  }
  return c
}

interface Probe {
  text: string
  failures: string[]
}

/** During the outage: /readyz must say 503 with a reason, and a read must be a quick 503. */
async function probeOutage(p: CliProc, pauseMs: number): Promise<Probe> {
  const started = Date.now()
  const url = p.url()!
  const failures: string[] = []
  const parts: string[] = []
  const ready = await timed(`${url}/readyz`)
  parts.push(
    `/readyz ${ready.status} in ${ready.ms} ms${ready.body ? ` ${ready.body.slice(0, 80)}` : ''}`,
  )
  if (ready.status !== 503 && !p.exit())
    failures.push(`/readyz answered ${ready.status}, not 503, with the database down`)
  const read = await timed(`${url}/v1/prompts?limit=1`)
  parts.push(`read ${read.status} in ${read.ms} ms`)
  if (!p.exit() && (read.status !== 503 || read.ms > 5_000))
    failures.push(
      `a read answered ${read.status} in ${read.ms} ms with the database down (want a 503 within 5 s)`,
    )
  // An export (SPEC 13) is a clean 503 too, never a 200 with a truncated file.
  const exported = await timed(`${url}/v1/export/prompts.ndjson`)
  parts.push(`export ${exported.status} in ${exported.ms} ms`)
  if (!p.exit() && exported.status !== 503)
    failures.push(`an export answered ${exported.status} with the database down (want 503)`)
  const left = pauseMs - (Date.now() - started)
  if (left > 0) await sleep(left)
  return { text: parts.join(', '), failures }
}

/** Once /readyz answers 200 again: every read of the run's keys, none of them a 5xx. */
async function readsOnceReady(p: CliProc, uris: Iterable<string>): Promise<Probe> {
  const url = p.url()!
  const deadline = Date.now() + 60_000
  while ((await timed(`${url}/readyz`)).status !== 200) {
    if (p.exit() || Date.now() > deadline)
      return { text: 'never ready again', failures: ['/readyz never answered 200 again'] }
    await sleep(100)
  }
  const sweep = await sweepReads(url, uris)
  return {
    text: `then ${sweep.reads} reads, ${sweep.failures.length} failed`,
    failures: sweepProblems('after /readyz 200', sweep),
  }
}

/**
 * The administrator's kill, under reads: the record tables locked, so reads that miss the
 * answer cache (list pages of several sizes) wait inside their statements; then every
 * backend of the product is terminated (each says 57P01 and closes), the lock released, and
 * every read made again once /readyz is 200. The reads that were cut may fail; none after.
 */
async function terminateUnderReads(url: string, p: CliProc, uris: Iterable<string>) {
  const base = p.url()!
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  let terminated = 0
  let reads: ReturnType<typeof timed>[] = []
  let exported: ReturnType<typeof timed> | null = null
  try {
    await admin.begin(async (tx) => {
      await tx`LOCK TABLE prompts, conversations, agents IN ACCESS EXCLUSIVE MODE`
      reads = [1, 2, 3, 4, 5, 6, 7].map((n) => timed(`${base}/v1/prompts?limit=${n}`))
      exported = timed(`${base}/v1/export/prompts.ndjson`)
      for (let i = 0; i < 100; i++) {
        const [{ n }] = await tx<{ n: number }[]>`SELECT count(*)::int AS n
          FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`
        if (n >= 3) break
        await sleep(50)
      }
      const rows = await tx`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()
          AND backend_type = 'client backend'`
      terminated = rows.length
    })
  } finally {
    await admin.end({ timeout: 5 })
  }
  // Answered once the lock is gone: retried on a fresh connection, or a 503.
  const cut = (await Promise.all(reads)).map((r) => r.status)
  // The export whose snapshot was cut: a clean 503, or (read again) a whole file.
  const exp = await (exported as ReturnType<typeof timed> | null)
  const exportProblem = exp ? cutExportProblem(exp) : 'the export was never asked'
  const after = await readsOnceReady(p, uris)
  return {
    text: `terminated ${terminated} backends under reads (those reads: ${cut.join(' ')}, the export: ${exp?.status}); ${after.text}`,
    failures: [
      ...(exportProblem ? [`backends terminated under an export: ${exportProblem}`] : []),
      ...after.failures.map((f) => `backends terminated: ${f}`),
    ],
  }
}

/** Null when an export cut by the database is a 503, or a 200 whose every line is whole. */
function cutExportProblem(r: { status: number | string; body: string }): string | null {
  if (r.status === 503) return null
  if (r.status !== 200) return `answered ${r.status}`
  const lines = r.body.split('\n')
  if (lines.pop() !== '') return 'a 200 whose last line is cut'
  for (const line of lines) {
    try {
      JSON.parse(line)
    } catch {
      return 'a 200 with a line that is not JSON'
    }
  }
  return null
}

async function timed(url: string): Promise<{ status: number | string; ms: number; body: string }> {
  const t0 = Date.now()
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(40_000) })
    return { status: res.status, ms: Date.now() - t0, body: await res.text() }
  } catch (err) {
    return { status: `no answer (${(err as Error).name})`, ms: Date.now() - t0, body: '' }
  }
}

/** DIDs the events take down at some point: their upserts may be withheld from a reader. */
function takenDown(events: Array<{ kind: string; did: string; account?: { active: boolean } }>) {
  return new Set(events.filter((e) => e.kind === 'account' && !e.account?.active).map((e) => e.did))
}

type FeedLine = ChangeRow & { at: string }

/**
 * A subscriber of /v1/changes/subscribe that resumes from its last seq whenever it is
 * closed, as a client is told to. `alive` says whether the product still runs (a close
 * because it died is not the subscription's fault).
 */
function follow(url: () => string | null, alive: () => boolean) {
  const lines: FeedLine[] = []
  const problems: string[] = []
  const closes: Record<string, number> = {}
  const refusals: Record<string, number> = {}
  let stopped = false
  let connects = 0
  let ws: WebSocket | null = null
  const count = (m: Record<string, number>, k: string) => {
    m[k] = (m[k] ?? 0) + 1
  }
  const again = () => {
    if (!stopped) setTimeout(connect, 250)
  }
  function connect() {
    const base = url()
    if (stopped) return
    if (!base) return again()
    const since = lines.at(-1)?.seq ?? 0
    const socket = new WebSocket(
      `${base.replace(/^http/, 'ws')}/v1/changes/subscribe?since=${since}`,
    )
    ws = socket
    let opened = false
    let reason: { error: string; message: string } | null = null
    socket.on('open', () => {
      opened = true
      connects++
    })
    socket.on('unexpected-response', (req, res) => {
      // Refused before the upgrade: a 503 in the error shape while the database is away.
      let body = ''
      res.on('data', (d) => {
        body += d
      })
      res.on('end', () => {
        count(refusals, String(res.statusCode))
        let shape = false
        try {
          const b = JSON.parse(body)
          shape = typeof b.error === 'string' && typeof b.message === 'string'
        } catch {}
        if (res.statusCode !== 503 || !shape)
          problems.push(`subscription refused with ${res.statusCode}: ${body.slice(0, 120)}`)
        req.destroy()
      })
    })
    socket.on('error', () => {})
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data)) as FeedLine | { error: string; message: string }
      if ('error' in frame) {
        reason = frame
        return
      }
      const last = lines.at(-1)?.seq ?? 0
      if (frame.seq <= last) problems.push(`seq ${frame.seq} after ${last}: twice or out of order`)
      lines.push(frame)
    })
    socket.on('close', (code) => {
      if (opened) {
        count(closes, reason ? `${code} ${reason.error}` : String(code))
        // A close with no reason while the product lives (and is not shutting it down).
        if (!reason && !stopped && code !== 1001)
          setTimeout(() => {
            if (alive()) problems.push(`subscription closed ${code} without a reason frame`)
          }, 500)
      }
      again()
    })
  }
  connect()
  const stop = () => {
    stopped = true
    ws?.terminate()
  }
  /** Waits for it to reach the feed's end, stops it, and compares it with the feed. */
  async function settle(feed: ChangeRow[], hidden: Set<string>) {
    const end = feed.at(-1)?.seq ?? 0
    const deadline = Date.now() + 30_000
    while ((lines.at(-1)?.seq ?? 0) < end && Date.now() < deadline) await sleep(100)
    stop()
    const failures = [...problems]
    const got = new Map(lines.map((l) => [l.seq, l]))
    const want = new Map(feed.map((l) => [l.seq, l as FeedLine]))
    const did = (l: ChangeRow) => l.uri.split('/')[2]
    // A repo hidden at some point: its upserts may be withheld from one reader and not the
    // other (a live reader saw them before the takedown; the feed shows them again after a
    // reactivation). Every other change must be in both, the same.
    const excused = (l: ChangeRow) => l.op === 'upsert' && hidden.has(did(l))
    let missing = 0
    let extra = 0
    for (const [seq, l] of want) {
      const g = got.get(seq)
      if (!g) {
        if (!excused(l)) missing++
      } else if (JSON.stringify(g) !== JSON.stringify(l))
        failures.push(
          `subscription seq ${seq} differs: ${JSON.stringify(g)} vs ${JSON.stringify(l)}`,
        )
    }
    for (const [seq, l] of got) if (!want.has(seq) && !excused(l)) extra++
    if (missing > 0) failures.push(`subscription missed ${missing} changes of the feed`)
    if (extra > 0) failures.push(`subscription got ${extra} changes the feed does not have`)
    const say = (m: Record<string, number>) =>
      Object.entries(m)
        .map(([k, n]) => `${k}: ${n}`)
        .join(', ') || 'none'
    return {
      text: `subscriber: ${lines.length} changes over ${connects} connections (closes ${say(closes)}; refusals ${say(refusals)}); feed ${feed.length} lines`,
      failures,
    }
  }
  return { stop, settle }
}
