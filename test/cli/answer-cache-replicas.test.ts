import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import { realCid } from '../../demo-network/cid.ts'
import { tidFromMicros } from '../../demo-network/tid.ts'
import { CACHE_TRUST_MS } from '../../src/api/changes/cache-keeper.ts'
import {
  type CliProcess,
  startCli,
  startServing,
  waitFor,
  writeReplayFile,
} from '../helpers/cli.ts'

// A `serve` replica's answer cache against commits of an `ingest` process on the same
// Postgres: a new CID and a takedown reach it within the stated bound (CACHE_TRUST_MS,
// 750 ms; at most 1 s is promised). Each stale answer's request must have been sent
// at most 1 s after the test saw the change row committed (it polls for it every 20 ms).

const serverUrl = process.env.TEST_DATABASE_URL
const PROMPT = 'xyz.quasigod.lab.letta.compiledPrompt'
const BOUND_MS = 1000

describe.runIf(serverUrl)('answer cache across processes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pav-cache-'))
  const name = `pav_test_cache_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const url = new URL(serverUrl ?? 'postgres://x/y')
  url.pathname = `/${name}`
  const admin = postgres(serverUrl ?? '', { max: 1, onnotice: () => {} })
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} })
  const env = { DATABASE_URL: url.toString() }
  const children: CliProcess[] = []
  afterAll(async () => {
    for (const c of children) c.child.kill('SIGKILL')
    await sql.end()
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
    rmSync(dir, { recursive: true, force: true })
  })

  /** Runs `ingest` over one replay file until its last change row is in; returns when seen. */
  const ingestFile = async (file: string, seen: () => Promise<boolean>): Promise<number> => {
    const ingest = startCli(['ingest'], { ...env, SOURCE: 'replay', REPLAY_FILE: file, PORT: '0' })
    children.push(ingest)
    const at = await waitFor(
      'the change row',
      async () => ((await seen()) ? Date.now() : null),
      90_000,
    )
    ingest.child.kill('SIGTERM')
    await ingest.exited
    return at
  }

  it('a new CID and a takedown reach a serve replica within the bound', async () => {
    expect(CACHE_TRUST_MS).toBeLessThan(BOUND_MS)
    await admin.unsafe(`CREATE DATABASE ${name}`)
    expect(await startCli(['migrate'], env).exited).toBe(0)
    const first = join(dir, 'a.ndjson')
    writeReplayFile(first, 200)
    await ingestFile(first, async () => (await sql`SELECT 1 FROM changes LIMIT 1`).length > 0)
    const [p] = await sql<
      { did: string; rkey: string; cid: string; rev: string; record: object }[]
    >`
      SELECT did, rkey, cid, rev, record FROM prompts WHERE NOT deleted AND NOT hidden
      ORDER BY rkey LIMIT 1`
    const serve = await startServing(['serve'], { ...env, RATE_LIMIT_PER_MINUTE: '10000000' })
    children.push(serve)
    const lookup = `${serve.url}/v1/prompts/${p.did}/${p.rkey}`
    await waitFor('serve ready', async () => (await fetch(`${serve.url}/readyz`)).ok)

    // The reader: lookups back to back, each noted with when it was sent and what it said.
    const seen: Array<{ sentAt: number; status: number; cid: string | null }> = []
    let reading = true
    const reader = (async () => {
      while (reading) {
        const sentAt = Date.now()
        const res = await fetch(lookup)
        const body = res.status === 200 ? ((await res.json()) as { cid: string }) : null
        if (!body) await res.text()
        seen.push({ sentAt, status: res.status, cid: body?.cid ?? null })
        await new Promise((r) => setTimeout(r, 25))
      }
    })()
    await waitFor('cached answers', async () => seen.filter((s) => s.cid === p.cid).length > 20)

    // A recompile of that prompt: a new record, CID and rev, committed by `ingest`.
    const nowUs = Date.now() * 1000
    const record = { ...p.record, note: 'recompiled by the cache test' }
    const cid = realCid(record)
    const update = {
      did: p.did,
      time_us: nowUs,
      kind: 'commit',
      commit: {
        rev: tidFromMicros(nowUs, 1),
        operation: 'update',
        collection: PROMPT,
        rkey: p.rkey,
        record,
        cid,
      },
    }
    const second = join(dir, 'b.ndjson')
    writeFileSync(second, `${JSON.stringify(update)}\n`)
    const cidAt = await ingestFile(
      second,
      async () =>
        (
          await sql`SELECT 1 FROM changes WHERE did = ${p.did} AND rkey = ${p.rkey} AND cid = ${cid}`
        ).length > 0,
    )
    await waitFor('the new CID at the replica', async () => seen.at(-1)?.cid === cid, 10_000)

    // A takedown of the repo: its prompt must 404 at the replica.
    const takedown = {
      did: p.did,
      time_us: nowUs + 1000,
      kind: 'account',
      account: {
        active: false,
        did: p.did,
        seq: 10_000_000,
        status: 'takendown',
        time: new Date().toISOString(),
      },
    }
    const third = join(dir, 'c.ndjson')
    writeFileSync(third, `${JSON.stringify(takedown)}\n`)
    const hiddenAt = await ingestFile(
      third,
      async () =>
        (
          await sql`SELECT 1 FROM changes WHERE did = ${p.did} AND rkey = ${p.rkey} AND op = 'delete'`
        ).length > 0,
    )
    await waitFor('the takedown at the replica', async () => seen.at(-1)?.status === 404, 10_000)
    reading = false
    await reader

    const staleCid = seen.filter((s) => s.cid === p.cid && s.sentAt > cidAt + BOUND_MS)
    const staleVisible = seen.filter((s) => s.status === 200 && s.sentAt > hiddenAt + BOUND_MS)
    expect(staleCid).toEqual([])
    expect(staleVisible).toEqual([])
    // Both changes were seen by requests sent after them, not only by the last one.
    expect(seen.filter((s) => s.cid === cid).length).toBeGreaterThan(0)
    expect(seen.every((s) => s.status === 200 || s.status === 404)).toBe(true)
  }, 300_000)
})
