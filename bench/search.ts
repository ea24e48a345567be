import { CLI, freePort, spawnNode, waitForHttp } from '../test/helpers/node-child.ts'
import { createTempDatabase } from '../test/helpers/pg-cluster.ts'
import { loadReadDataset } from './lib/api-data.ts'
import { benchEnv, count } from './lib/env.ts'
import { openBenchRuntime } from './lib/ingest-kit.ts'
import { checkpoint, rawClient } from './lib/pg.ts'

// GET /v1/search at scale: the read benchmark's dataset (generated traffic indexed by the
// product, then whole repos copied in SQL up to BENCH_SEARCH_PROMPTS, default 500,000),
// `prompt-appview serve` in its own process, and one request at a time per kind of query,
// timed end to end over HTTP: a rare word (a conversation id from Letta's metadata block: one match per
// copied repo), a word every prompt has, two such words, a word no prompt has, a common
// word with a flag filter, with a repo filter, and the next page of a common word.
// Target: well under 100 ms.

const ROUNDS = count('BENCH_SEARCH_ROUNDS', 30)
const log = (m: string) => console.log(`[search] ${m}`)

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

async function main() {
  const prompts = count('BENCH_SEARCH_PROMPTS', 500_000)
  const db = await createTempDatabase(benchEnv.serverUrl, 'bench_search')
  let stop: (() => Promise<void>) | null = null
  try {
    const rt = await openBenchRuntime({ kind: 'postgres', url: db.url })
    const t0 = performance.now()
    try {
      await loadReadDataset(rt, db.url, prompts, count('BENCH_API_SEED_PROMPTS', 10_000), log)
    } finally {
      await rt.close()
    }
    log(`dataset in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
    const client = rawClient(db.url)
    // Letta's metadata block names the conversation, a word found in one prompt only.
    const sample = await client<{ did: string; word: string }[]>`
      SELECT did, substring(record->>'content' from 'CONVERSATION_ID: (conv-[0-9a-f-]+)') AS word
      FROM prompts TABLESAMPLE SYSTEM (1)
      WHERE NOT deleted AND NOT hidden AND record->>'content' LIKE '%CONVERSATION_ID: conv-%'
      LIMIT ${ROUNDS}`
    const [sizes] = await client<{ visible: number; gin: string; col: string }[]>`
      SELECT (SELECT count(*)::int FROM prompts WHERE NOT deleted AND NOT hidden) AS visible,
        pg_size_pretty(pg_relation_size('prompts_search_idx')) AS gin,
        pg_size_pretty((SELECT sum(pg_column_size(search_vector)) FROM prompts)) AS col`
    await client.end()
    log(`${sizes.visible} visible prompts; GIN ${sizes.gin}, search_vector column ${sizes.col}`)
    await checkpoint(benchEnv.serverUrl)

    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const api = spawnNode([CLI, 'serve'], {
      DATABASE_URL: db.url,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '10000000',
    })
    stop = () => api.stop()
    await waitForHttp(`${base}/readyz`, api)
    const first = await (await fetch(`${base}/v1/search?q=coffee&limit=50`)).json()
    const cursor = (first as { cursor?: string }).cursor ?? ''
    const kinds: Record<string, (i: number) => string> = {
      'rare word (a conversation id)': (i) => `q=${sample[i % sample.length].word}`,
      'common word': () => 'q=coffee',
      'two common words': () => 'q=garden+letter',
      'no match': (i) => `q=zzq${i}xx`,
      'common word, flag=staleMemory': () => 'q=coffee&flag=staleMemory',
      'common word, one repo': (i) => `q=coffee&did=${sample[i % sample.length].did}`,
      'common word, page 2': () => `q=coffee&cursor=${cursor}`,
      'rare and common word': (i) => `q=coffee+${sample[i % sample.length].word}`,
    }
    const out: string[] = []
    for (const [name, path] of Object.entries(kinds)) {
      const times: number[] = []
      let items = 0
      for (let i = 0; i < ROUNDS + 3; i++) {
        const t = performance.now()
        const res = await fetch(`${base}/v1/search?${path(i)}`)
        const body = (await res.json()) as { items?: unknown[] }
        if (res.status !== 200)
          throw new Error(`${name}: HTTP ${res.status} ${JSON.stringify(body)}`)
        if (i >= 3) times.push(performance.now() - t)
        items = body.items?.length ?? 0
      }
      const line = `${name}: p50 ${pct(times, 50).toFixed(1)} ms, p95 ${pct(times, 95).toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms (${items} items on the last page)`
      out.push(line)
      log(line)
    }
    console.log(
      `\nGET /v1/search at ${sizes.visible} visible prompts, ${ROUNDS} sequential requests each:\n  ${out.join('\n  ')}`,
    )
  } finally {
    await stop?.()
    await db.drop()
  }
}

await main()
