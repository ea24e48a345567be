import postgres from 'postgres'
import { startLatencyProxy } from '../../helpers/latency-proxy.ts'
import { COMMON_ENV, replayArgs } from '../lib/baseline.ts'
import { sleep, startCli, tail } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import { freshDb, SERVER_URL } from '../lib/db.ts'
import { readDigest } from '../lib/digest.ts'
import { readCursor, waitCaughtUp } from '../lib/progress.ts'
import type { Scenario } from '../lib/scenario.ts'

// Postgres slow rather than gone under `run`: a proxy delays every packet by a random
// latency for a random while mid-replay (ingestion slows; reads stay bounded), then the
// prompts table is locked as an analyst's long query locks it (a read must be a 503 with
// Retry-After within the read timeout and /readyz must say the database is slow). The run
// ends in the uninterrupted run's state, with no restart.

const READ_TIMEOUT_MS = 1000

export const slowDbScenario: Scenario = {
  name: 'slow-db',
  short: true,
  injects: 'packet latency through a proxy mid-replay, then the prompts table locked',
  async run(ctx, shared) {
    const base = await shared.baseline('postgres')
    const db = await freshDb(ctx, 'postgres')
    const server = new URL(SERVER_URL)
    const proxy = await startLatencyProxy({ host: server.hostname, port: Number(server.port) })
    ctx.defer('close the proxy', () => proxy.close())
    const direct = db.env.DATABASE_URL
    const p = startCli(replayArgs(base.file), {
      ...COMMON_ENV,
      DATABASE_URL: proxy.urlFor(direct),
      READ_TIMEOUT_MS: String(READ_TIMEOUT_MS),
      BATCH_SIZE: '25',
    })
    ctx.defer('stop the product', () => void p.kill9())
    await p.waitListening()
    const failures: string[] = []
    const first = base.set.events[0].time_us
    const target = first + (0.05 + 0.4 * ctx.rand.next()) * (base.set.lastTimeUs - first)
    while (((await readCursor(p)) ?? 0) < target && !p.exit()) await sleep(20)
    const latency = ctx.rand.int(30, 200)
    const slowFor = ctx.rand.int(1_000, ctx.short ? 3_000 : 10_000)
    proxy.setLatency(latency)
    const from = await readCursor(p)
    let longest = 0
    for (const until = Date.now() + slowFor; Date.now() < until; ) {
      const r = await timed(`${p.url()}/v1/prompts?limit=${ctx.rand.int(1, 90)}`)
      longest = Math.max(longest, r.ms)
      if (r.status !== 200 && r.status !== 503)
        failures.push(`a read answered ${r.status} under ${latency} ms latency`)
    }
    const to = await readCursor(p)
    proxy.setLatency(0)
    if (longest > READ_TIMEOUT_MS + 3_000)
      failures.push(`a read took ${longest} ms under ${latency} ms latency`)
    const lock = await lockedRead(direct, `${p.url()}/v1/prompts?limit=99`)
    const ready = await timed(`${p.url()}/readyz`)
    const slowSaid = ready.status === 200 && JSON.parse(ready.body).details?.database?.slow === true
    if (lock.status !== 503 || !lock.retryAfter || lock.ms > READ_TIMEOUT_MS + 2_000)
      failures.push(
        `a read behind a lock answered ${lock.status} in ${lock.ms} ms (retry-after ${lock.retryAfter})`,
      )
    if (!slowSaid) failures.push(`/readyz did not say slow: ${ready.status} ${ready.body}`)
    await waitCaughtUp(p, base.set.lastTimeUs, 180_000)
    const got = await readDigest(p.url()!, base.fine.records.keys())
    const cmp = compareDigests(got, base.fine, base.fine.feed)
    failures.push(...cmp.problems)
    ctx.note(
      `${latency} ms per packet for ${slowFor} ms (cursor ${from} -> ${to}), longest read ${longest} ms; behind a lock: ${lock.status} in ${lock.ms} ms; /readyz slow: ${slowSaid}; ${cmp.summary}`,
    )
    const code = await p.stop()
    if (code !== 0) failures.push(`SIGTERM exit code ${code}:\n${tail(p.output())}`)
    return {
      failures,
      figures: `longest read ${longest} ms at ${latency} ms/packet, locked read ${lock.ms} ms, digest ${got.hash}`,
    }
  },
}

/** A read made while another session holds an exclusive lock on prompts. */
async function lockedRead(databaseUrl: string, url: string) {
  const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    return await admin.begin(async (tx) => {
      await tx`LOCK TABLE prompts IN ACCESS EXCLUSIVE MODE`
      return timed(url)
    })
  } finally {
    await admin.end({ timeout: 5 })
  }
}

async function timed(url: string) {
  const t0 = Date.now()
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(30_000) })
    const body = await res.text()
    return {
      status: res.status,
      body,
      ms: Date.now() - t0,
      retryAfter: res.headers.get('retry-after'),
    }
  } catch (err) {
    return {
      status: `no answer (${(err as Error).name})`,
      body: '',
      ms: Date.now() - t0,
      retryAfter: null,
    }
  }
}
