import { readdirSync, readFileSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import {
  AGENT_RKEY,
  ALICE,
  BOB,
  CAROL,
  makeApp,
  type Seeded,
  useSeededApp,
} from '../api/fixtures.ts'
import { apply, NSIDS, sha256 } from '../helpers/events.ts'

// The browse UI's pages through Fastify's inject: status codes, headers and what the HTML
// holds. The same pages in a real browser are in test/ui/browse.test.ts.

let db: Database
let app: FastifyInstance
let s: Seeded
useSeededApp({}, (x) => {
  ;({ db, app, s } = x)
})

const page = async (url: string, accept = 'text/html') => {
  const r = await app.inject({ method: 'GET', url, headers: { accept } })
  return { status: r.statusCode, headers: r.headers, body: r.body }
}
const enc = encodeURIComponent
/** What the JSON API answers the same request, parsed. */
const api = async (url: string) => {
  const r = await page(url, 'application/json')
  return { status: r.status, body: JSON.parse(r.body) }
}
/** Text as the pages escape it (hono/html). */
const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}
const escaped = (text: string) => text.replace(/[&<>"']/g, (c) => ENTITIES[c]!)
const rkeysOf = (html: string) =>
  [...html.matchAll(/href="\/prompts\/[^/"]+\/([^"?#]+)"/g)].map((m) => m[1])

describe('pages', () => {
  it('the overview counts flags, shows ingestion and recent changes, with a strict CSP', async () => {
    const r = await page('/')
    expect(r.status).toBe(200)
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8')
    const csp = String(r.headers['content-security-policy'])
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("default-src 'none'")
    expect(csp).not.toContain('unsafe-inline')
    expect(r.headers['x-content-type-options']).toBe('nosniff')
    expect(r.body).toContain('href="/prompts?flag=orphaned"')
    expect(r.body).toContain('Recent changes')
    // Sync 1.1: the fixture's repos have no chain state: none is known to be out of sync,
    // and none is claimed to be in sync either (test 'repos out of sync' below).
    expect(r.body).toContain('Repo sync')
    expect(r.body).toContain('No visible repo is known to be out of sync.')
    expect(r.body).toContain('@alice.test')
    // carol is taken down: her handle is gone, and of her changes only the deletes that
    // withdrew her records show (as in /v1/changes), without links.
    expect(r.body).not.toContain('carol.test')
    // Agents and conversations by the name their record gives; a prompt, which shares its
    // record key with its conversation, by its key.
    const rows = r.body.split('<tr>')
    const named = rows.filter((row) => /<td>upsert (agent|conversation)<\/td>/.test(row))
    expect(named.some((row) => row.includes('class="record-name"'))).toBe(true)
    const promptRows = rows.filter((row) => row.includes('<td>upsert compiledPrompt</td>'))
    expect(promptRows.length).toBeGreaterThan(0)
    for (const row of promptRows) expect(row).not.toContain('record-name')
    const carolRows = rows.filter((row) => row.includes(CAROL))
    expect(carolRows.length).toBeGreaterThan(0)
    for (const row of carolRows) {
      expect(row).toMatch(/<td>delete /)
      expect(row).not.toContain('href="/prompts/')
    }
  })

  it('lists filtered prompts and pages forward and back with the filters kept', async () => {
    const first = await page('/prompts?did=bob.test&limit=5')
    expect(first.status).toBe(200)
    const newest = [...s.bobRkeys].reverse()
    expect(rkeysOf(first.body)).toEqual(newest.slice(0, 5))
    const next = /id="page-next" href="([^"]+)"/.exec(first.body)?.[1]?.replaceAll('&amp;', '&')
    expect(next).toMatch(/did=bob\.test/)
    const second = await page(next!)
    expect(rkeysOf(second.body)).toEqual(newest.slice(5, 10))
    const back = /id="page-prev" href="([^"]+)"/.exec(second.body)?.[1]?.replaceAll('&amp;', '&')
    const again = await page(back!)
    expect(rkeysOf(again.body)).toEqual(newest.slice(0, 5))
    expect(again.body).not.toContain('id="page-prev"')
  })

  it('orders by the selected sort, says which order in the caption, and pages keep it', async () => {
    const plain = await page('/prompts')
    expect(plain.body).toContain('<select id="f-sort" name="sort">')
    expect(plain.body).toContain('<option value="" selected>record key (created)</option>')
    expect(plain.body).toContain('by record key, descending')
    for (const sort of ['compiled', 'indexed', 'recompiles', 'size'])
      expect(plain.body).toContain(`<option value="${sort}">`)
    const first = await page('/prompts?sort=recompiles&limit=4')
    expect(first.status).toBe(200)
    expect(first.body).toContain('<option value="recompiles" selected>')
    expect(first.body).toContain('All visible prompts, most recompiles first')
    // The only recompiled prompt comes first; the page is what the API answers.
    const want = (await api('/v1/prompts?sort=recompiles&limit=100')).body.items.map(
      (i: { rkey: string }) => i.rkey,
    )
    expect(want[0]).toBe(s.alice.recompiled)
    expect(rkeysOf(first.body)).toEqual(want.slice(0, 4))
    const next = /id="page-next" href="([^"]+)"/.exec(first.body)?.[1]?.replaceAll('&amp;', '&')
    expect(next).toMatch(/sort=recompiles/)
    const second = await page(next!)
    expect(rkeysOf(second.body)).toEqual(want.slice(4, 8))
    expect(second.body).toContain('<option value="recompiles" selected>')
    const back = /id="page-prev" href="([^"]+)"/.exec(second.body)?.[1]?.replaceAll('&amp;', '&')
    expect(back).toMatch(/sort=recompiles/)
    const search = await page('/prompts?q=agent&sort=size')
    expect(search.body).toContain('matching “agent”, largest content first')
  })

  it('shows an agent by the name its record gives (the at-uri its title), else by its at-uri', async () => {
    const named = `at://${ALICE}/${NSIDS.agent}/${AGENT_RKEY}`
    const link = `<a class="agent-name" href="/agents/${enc(ALICE)}/${AGENT_RKEY}" title="${named}">helper</a>`
    const list = await page('/prompts?did=bob.test&limit=12')
    expect(list.body).toContain(link)
    expect(list.body).not.toContain(`<code class="uri">${named}</code>`)
    // The agent bob's prompts name but nobody indexed: its at-uri, as before.
    expect(list.body).toContain(`<code class="uri">at://${BOB}/${NSIDS.agent}/ghost</code>`)
    const prompt = await page(`/prompts/${enc(BOB)}/${s.bobRkeys[1]}`)
    expect(prompt.body).toContain(link)
  })

  it('search answers SQL-looking text as words, with filters kept', async () => {
    const r = await page(`/prompts?q=${enc("'; DROP TABLE prompts; --")}&flag=ok`)
    expect(r.status).toBe(200)
    expect(r.body).toContain('value="&#39;; DROP TABLE prompts; --"')
    const hit = await page('/prompts?q=agent&did=alice.test')
    expect(hit.status).toBe(200)
    expect(hit.body).toContain('<mark>agent</mark>')
    expect(hit.body).not.toContain(BOB)
  })

  it('a flag filter lists only prompts with that flag', async () => {
    const r = await page('/prompts?flag=orphaned')
    expect(r.body).toContain(s.alice.orphaned)
    expect(r.body).not.toContain(`/${s.alice.ok}"`)
  })

  it('a prompt page marks the core memory, lists flags and revisions, links its records', async () => {
    const r = await page(`/prompts/${enc(ALICE)}/${s.alice.recompiled}`)
    expect(r.status).toBe(200)
    expect(r.body).toContain('<mark class="core"')
    expect(r.body).toContain(`href="/conversations/${enc(ALICE)}/${s.alice.recompiled}"`)
    expect(r.body).toContain(`href="/agents/${enc(ALICE)}/${AGENT_RKEY}"`)
    expect((r.body.match(/name="from"/g) ?? []).length).toBe(3)
    const detached = await page(`/prompts/${enc(ALICE)}/${s.alice.detached}`)
    expect(detached.body).toContain('coreMemoryDetached')
    expect(detached.body).toContain('&lt;memory&gt;gone&lt;/memory&gt;')
  })

  it('conversation, agent and repo pages', async () => {
    const c = await page(`/conversations/${enc(ALICE)}/${s.alice.ok}`)
    expect(c.status).toBe(200)
    expect(c.body).toContain(`href="/prompts/${enc(ALICE)}/${s.alice.ok}"`)
    const a = await page(`/agents/${enc(ALICE)}/${AGENT_RKEY}`)
    expect(a.status).toBe(200)
    expect(a.body).toContain('Prompt health')
    expect(a.body).toContain('helper')
    for (const who of [enc(BOB), 'bob.test']) {
      const r = await page(`/repos/${who}`)
      expect(r.status).toBe(200)
      expect(r.body).toContain('@bob.test')
      // Sync state and record counts come from /v1/repos.
      // The fixture's events carry no commit chain, so the repo has no sync state to show.
      expect(r.body).not.toContain('<dt>sync</dt>')
      expect(r.body).toContain('<dt>account</dt><dd>active</dd>')
      expect(r.body).toContain(`<dt>prompts</dt><dd>${s.bobRkeys.length}</dd>`)
    }
  })
})

describe('repos out of sync', () => {
  const panel = (body: string) =>
    body.slice(body.indexOf('id="sync-h"'), body.indexOf('id="changes-h"'))
  const visibleAccounts = async () =>
    (
      await db.rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM accounts WHERE active AND NOT operator_hidden`,
      )
    )[0].n

  it('says what a repo without a sync state is, counts only visible repos, and claims "in sync" only when every one was checked', async () => {
    const all = await db.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM accounts`)
    const visible = await visibleAccounts()
    // carol is taken down: the card counts what the API serves, never her repo.
    expect(visible).toBeLessThan(all[0].n)
    const before = panel((await page('/')).body)
    expect(before).toContain(
      `<li data-state="unknown"><strong>not checked</strong>: ${visible} repos`,
    )
    expect(before).toContain('came through Jetstream or a replay')
    expect(before).toContain('No visible repo is known to be out of sync.')
    expect(before).not.toContain('class="warn"')
    expect(before).not.toContain('Every visible repo is in sync.')
    await db.rows(sql`INSERT INTO repo_chain (did, rev, sync_state, sync_since, updated_at)
      SELECT did, '3zzzzzzzzzzzz', 'synchronized', now(), now() FROM accounts`)
    try {
      const after = panel((await page('/')).body)
      expect(after).toContain(`<strong>in sync</strong>: ${visible} repos`)
      expect(after).toContain('Every visible repo is in sync.')
      expect(after).not.toContain('not checked')
    } finally {
      await db.rows(sql`DELETE FROM repo_chain`)
    }
  })

  it('the overview lists visible repos out of sync with their reason, never hidden ones', async () => {
    for (const did of [ALICE, CAROL])
      await db.rows(sql`INSERT INTO repo_chain (did, rev, sync_state, sync_reason, sync_since, updated_at)
        VALUES (${did}, '3zzzzzzzzzzzz', 'desynchronized', 'since', now(), now())`)
    try {
      const p = panel((await page('/')).body)
      expect(p).toContain('<strong>out of sync</strong>: 1 repo ')
      expect(p).toContain('1 visible repo is out of sync or being re-fetched.')
      expect(p).toContain(`href="/repos/${enc(ALICE)}"`)
      expect(p).toContain('out of sync (since)')
      expect(p).not.toContain(CAROL)
      const repo = await page(`/repos/${enc(ALICE)}`)
      expect(repo.body).toContain('<dt>sync</dt><dd>desynchronized (since)</dd>')
    } finally {
      await db.rows(sql`DELETE FROM repo_chain`)
    }
  })
})

describe('indexing under way', () => {
  const notice = async () => {
    const body = (await page('/')).body
    const at = body.indexOf('id="progress-panel"')
    return at < 0 ? null : body.slice(at, body.indexOf('</section>', at))
  }
  const cursor = (source: string, behindSeconds: number, idleSeconds: number) =>
    db.rows(sql`INSERT INTO ingest_cursors (source, key, kind, cursor, last_event_us, updated_at)
      VALUES (${source}, 'test-key', 'time_us', 1,
        (EXTRACT(EPOCH FROM now()) - ${behindSeconds}) * 1e6,
        now() - make_interval(secs => ${idleSeconds}))`)

  it('says a catch-up is under way while the cursor moves far behind the present, and not after', async () => {
    try {
      await cursor('jetstream', 3 * 3600, 0)
      const shown = await notice()
      expect(shown).toContain('Indexing is catching up')
      expect(shown).toContain('3.0 h behind the present')
      await db.rows(sql`UPDATE ingest_cursors SET updated_at = now() - interval '1 hour'`)
      expect(await notice()).toBeNull()
    } finally {
      await db.rows(sql`DELETE FROM ingest_cursors WHERE key = 'test-key'`)
    }
  })

  it('says a replay is under way, and nothing when a live source is current', async () => {
    try {
      await cursor('replay', 400 * 86_400, 0)
      expect(await notice()).toContain('A replay is under way')
      await db.rows(sql`DELETE FROM ingest_cursors WHERE key = 'test-key'`)
      await cursor('jetstream', 2, 0)
      expect(await notice()).toBeNull()
    } finally {
      await db.rows(sql`DELETE FROM ingest_cursors WHERE key = 'test-key'`)
    }
  })
})

describe('a backfill under way', () => {
  const notice = async () => {
    const body = (await page('/')).body
    const at = body.indexOf('id="progress-panel"')
    return at < 0 ? null : body.slice(at, body.indexOf('</section>', at))
  }
  const run = (id: string, listingDone: boolean, idleSeconds: number, finished: boolean) =>
    db.rows(sql`INSERT INTO backfill_runs
      (id, started_at, updated_at, listed, listing_done, done, skipped, failed, records, finished_at)
      VALUES (${id}, now() - interval '1 minute', now() - make_interval(secs => ${idleSeconds}),
        120, ${listingDone}, 40, 7, 2, 1234, ${finished ? sql`now()` : null})`)

  it('shows its counts while its run is written, "M+" while it still lists', async () => {
    try {
      await run('listing', false, 0, false)
      const shown = await notice()
      expect(shown).toContain(
        '<strong>A backfill is under way:</strong> 40 of 120+ repos (7 skipped, 2 failed), 1234 records so far.',
      )
      // In the replay notice's panel, which live.js polls while it shows.
      expect((await page('/')).body).toContain(
        '<section class="panel wide progress" id="progress-panel"',
      )
      await db.rows(sql`UPDATE backfill_runs SET listing_done = true`)
      expect(await notice()).toContain('40 of 120 repos (7 skipped, 2 failed), 1234 records so far')
    } finally {
      await db.rows(sql`DELETE FROM backfill_runs`)
    }
  })

  it('shows nothing once the run is finished, or no longer written', async () => {
    try {
      await run('finished', true, 0, true)
      await run('stale', true, 60, false)
      expect(await notice()).toBeNull()
    } finally {
      await db.rows(sql`DELETE FROM backfill_runs`)
    }
  })

  it('shares the one panel with a replay under way', async () => {
    try {
      await run('beside', true, 0, false)
      await db.rows(sql`INSERT INTO ingest_cursors (source, key, kind, cursor, last_event_us, updated_at)
        VALUES ('replay', 'test-key', 'time_us', 1, 1, now())`)
      const body = (await page('/')).body
      expect(body.split('id="progress-panel"').length).toBe(2)
      const shown = await notice()
      expect(shown).toContain('A replay is under way')
      expect(shown).toContain('A backfill is under way')
    } finally {
      await db.rows(sql`DELETE FROM backfill_runs`)
      await db.rows(sql`DELETE FROM ingest_cursors WHERE key = 'test-key'`)
    }
  })
})

describe('bad input gets a friendly page, never a 5xx', () => {
  const cases: Array<[string, number, string]> = [
    ['/prompts?bogus=1', 400, 'unknown parameter &quot;bogus&quot;'],
    ['/?x=1', 400, 'unknown parameter &quot;x&quot;'],
    ['/prompts?flag=nope', 400, 'flag must be one of'],
    ['/prompts?sort=newest', 400, 'sort must be one of'],
    ['/prompts?flag=ok&flag=orphaned', 400, 'flag is given more than once'],
    ['/prompts?limit=0', 400, 'limit'],
    ['/prompts?limit=abc', 400, 'limit'],
    ['/prompts?cursor=%21%21', 400, 'cursor is malformed'],
    ['/prompts?cursor=eyJh&prev=%3Cscript%3E', 400, 'prev is malformed'],
    ['/prompts?did=not%20a%20did', 400, 'did must be a DID or a handle'],
    ['/prompts?agent=javascript:alert(1)', 400, 'agent must be'],
    ['/prompts/not-a-did/x', 400, 'did must be a DID or a handle'],
    [`/prompts/${enc(ALICE)}/bad%20rkey`, 400, 'rkey is not a valid record key'],
    [`/prompts/${enc(ALICE)}/3zzzzzzzzzzzz`, 404, 'no prompt at'],
    [`/prompts/${enc(CAROL)}/${'3zzzzzzzzzzz2'}`, 404, 'no prompt at'],
    ['/conversations/did%3Aplc%3Anobody/3zzzzzzzzzzzz', 404, 'no conversation'],
    ['/agents/did%3Aplc%3Anobody/3zzzzzzzzzzzz', 404, 'no agent'],
    ['/repos/nobody.test', 404, 'no visible records'],
    ['/no/such/page', 404, 'there is no page at /no/such/page'],
    [`/prompts?q=${'a'.repeat(10_000)}`, 400, 'q'],
    ['/prompts?q=%21%40%23%24%25%5E%26*()', 400, 'q has no words'],
    [`/prompts/${enc(ALICE)}/${'3zzzzzzzzzzzz'}?from=3zzzzzzzzzzzz`, 404, 'no prompt at'],
    ['/prompts/x/y?from=%3Cb%3E', 400, 'did must be a DID or a handle'],
    ['/prompts/%E0%A4%A', 400, ''],
  ]
  for (const [url, status, text] of cases) {
    it(`${url} → ${status}`, async () => {
      const r = await page(url)
      expect(r.status).toBe(status)
      expect(r.headers['content-type']).toMatch(/^text\/html/)
      expect(r.headers['content-security-policy']).toContain("script-src 'self'")
      expect(r.body).toContain(text)
      expect(r.body).not.toMatch(/at [\w./]+\.ts:\d+/)
    })
  }

  it('a diff with a rev that does not exist, or of another prompt, is a 404 page', async () => {
    const base = `/prompts/${enc(ALICE)}/${s.alice.recompiled}`
    const revs = JSON.parse(
      (await page(`/v1/prompts/${ALICE}/${s.alice.recompiled}/revisions`)).body,
    ).items as Array<{ rev: string }>
    expect(revs.length).toBe(3)
    const ok = await page(`${base}?from=${revs[2]!.rev}&to=${revs[0]!.rev}`)
    expect(ok.status).toBe(200)
    expect(ok.body).toContain('id="diff"')
    const other = JSON.parse((await page(`/v1/prompts/${ALICE}/${s.alice.ok}/revisions`)).body)
      .items[0].rev
    for (const q of [`from=${other}&to=${revs[0]!.rev}`, 'to=3zzzzzzzzzzzz', 'from=bad%20rev']) {
      const r = await page(`${base}?${q}`)
      expect(r.status, q).toBe(q.includes('bad') ? 400 : 404)
      expect(r.headers['content-type']).toMatch(/^text\/html/)
    }
  })

  it('a taken-down repo says so, without its handle or records', async () => {
    const r = await page(`/repos/${enc(CAROL)}`)
    expect(r.status).toBe(200)
    expect(r.body).toContain('inactive (takendown)')
    expect(r.body).toContain('withheld')
    expect(r.body).not.toContain('carol.test')
    expect(r.body).not.toContain(`href="/prompts/${enc(CAROL)}/`)
  })

  it("a hidden repo's prompt is a 404 like any missing one", async () => {
    const r = await page(`/prompts/${enc(CAROL)}/${s.carolRkey}`)
    expect(r.status).toBe(404)
  })

  it('the JSON API keeps its JSON 404 for clients that do not ask for HTML', async () => {
    const r = await page('/no/such/page', 'application/json')
    expect(r.status).toBe(404)
    expect(JSON.parse(r.body)).toMatchObject({ error: 'NotFound' })
    const api = await page('/v1/nothing')
    expect(JSON.parse(api.body)).toMatchObject({ error: 'NotFound' })
  })
})

describe('the UI is one client of the API', () => {
  it('a page counts once against the rate limit, however many reads it makes', async () => {
    const limited = await makeApp(db, { RATE_LIMIT_PER_MINUTE: '3' })
    try {
      const url = `/prompts/${enc(ALICE)}/${s.alice.recompiled}`
      for (let i = 0; i < 3; i++) expect((await limited.inject({ url })).statusCode).toBe(200)
      expect((await limited.inject({ url })).statusCode).toBe(429)
    } finally {
      await limited.close()
    }
  })

  it('an ingest-only process serves no UI', async () => {
    const ingestOnly = await makeApp(db, {}, { readApi: false })
    try {
      const r = await ingestOnly.inject({ url: '/', headers: { accept: 'text/html' } })
      expect(r.statusCode).toBe(404)
      expect(JSON.parse(r.body)).toMatchObject({ error: 'NotFound' })
    } finally {
      await ingestOnly.close()
    }
  })

  it('the UI source never imports ingest code nor an unescaped-HTML helper', () => {
    const dir = new URL('../../src/api/ui/', import.meta.url)
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
      const src = readFileSync(new URL(f, dir), 'utf8')
      expect(src, f).not.toMatch(/from '[./]*\/ingest\//)
      expect(src, f).not.toMatch(/import\s*\{[^}]*\braw\b/)
    }
  })

  // Pages call the catalog's reads (src/api/catalog/reads.ts), not the API over HTTP: these compare
  // each page with the JSON answer to the same request, so a page can show nothing the API
  // hides and fails as the API fails.
  it('a list shows exactly the prompts the API lists: none of a taken-down repo', async () => {
    for (const [pageUrl, apiUrl] of [
      ['/prompts?limit=100', '/v1/prompts?limit=100'],
      ['/prompts?flag=orphaned&limit=100', '/v1/prompts?flag=orphaned&limit=100'],
      [`/prompts?did=${enc(CAROL)}`, `/v1/prompts?did=${enc(CAROL)}`],
      ['/prompts?did=carol.test', '/v1/prompts?did=carol.test'],
      [`/prompts?q=agent&limit=100`, '/v1/search?q=agent&limit=100'],
      [`/repos/${enc(CAROL)}`, `/v1/prompts?did=${enc(CAROL)}&limit=20`],
      [
        `/agents/${enc(ALICE)}/${AGENT_RKEY}`,
        `/v1/prompts?agent=${enc(`at://${ALICE}/${NSIDS.agent}/${AGENT_RKEY}`)}&limit=20`,
      ],
    ]) {
      const answer = await api(apiUrl)
      expect(answer.status, apiUrl).toBe(200)
      const shown = rkeysOf((await page(pageUrl)).body)
      expect(shown, pageUrl).toEqual(answer.body.items.map((i: { rkey: string }) => i.rkey))
      expect(shown, pageUrl).not.toContain(s.carolRkey)
    }
    const carol = await api(`/v1/repos/${enc(CAROL)}`)
    expect(carol.body.account).toMatchObject({ active: false, hidden: true })
    expect((await page(`/repos/${enc(CAROL)}`)).body).toContain(
      `inactive (${carol.body.account.status}); hidden`,
    )
  })

  it('a page that cannot be shown has the status and message of the API answer', async () => {
    const prompt = `${enc(ALICE)}/${s.alice.recompiled}`
    const cases: Array<[string, string]> = [
      [`/prompts/${enc(CAROL)}/${s.carolRkey}`, `/v1/prompts/${enc(CAROL)}/${s.carolRkey}`],
      [
        `/conversations/${enc(CAROL)}/${s.carolRkey}`,
        `/v1/conversations/${enc(CAROL)}/${s.carolRkey}`,
      ],
      [`/agents/${enc(CAROL)}/ghost`, `/v1/agents/${enc(CAROL)}/ghost`],
      [`/prompts/carol.test/${s.carolRkey}`, `/v1/prompts/carol.test/${s.carolRkey}`],
      [`/prompts/${prompt}?to=3zzzzzzzzzzzz`, `/v1/prompts/${prompt}/diff?to=3zzzzzzzzzzzz`],
      [`/prompts/${prompt}?revcursor=%21`, `/v1/prompts/${prompt}/revisions?cursor=%21`],
      ['/prompts?limit=abc', '/v1/prompts?limit=abc'],
      [`/prompts?did=${'a'.repeat(3000)}`, `/v1/prompts?did=${'a'.repeat(3000)}`],
      [`/prompts?q=${'a'.repeat(1001)}`, `/v1/search?q=${'a'.repeat(1001)}`],
      [`/prompts/${enc(ALICE)}/${'a'.repeat(600)}`, `/v1/prompts/${enc(ALICE)}/${'a'.repeat(600)}`],
    ]
    for (const [pageUrl, apiUrl] of cases) {
      const answer = await api(apiUrl)
      expect(answer.status, apiUrl).toBeGreaterThanOrEqual(400)
      const r = await page(pageUrl)
      expect(r.status, pageUrl).toBe(answer.status)
      expect(r.body, pageUrl).toContain(`<p class="message">${escaped(answer.body.message)}</p>`)
    }
  })

  it('a deleted prompt is gone from its page and from the list, as from the API', async () => {
    const rkey = s.bobRkeys[0]!
    await apply(s.deps, [s.w.prompt({ did: BOB, rkey, op: 'delete' })])
    const answer = await api(`/v1/prompts/${enc(BOB)}/${rkey}`)
    expect(answer.status).toBe(404)
    const r = await page(`/prompts/${enc(BOB)}/${rkey}`)
    expect(r.status).toBe(404)
    expect(r.body).toContain(escaped(answer.body.message))
    const list = await api('/v1/prompts?did=bob.test&limit=100')
    expect(list.body.items).toHaveLength(s.bobRkeys.length - 1)
    const shown = rkeysOf((await page('/prompts?did=bob.test&limit=100')).body)
    expect(shown).toEqual(list.body.items.map((i: { rkey: string }) => i.rkey))
    expect(shown).not.toContain(rkey)
  })

  it('serves its stylesheet and script from this origin', async () => {
    for (const [url, type] of [
      ['/assets/ui.css', 'text/css'],
      ['/assets/ui.js', 'javascript'],
    ]) {
      const r = await page(url, '*/*')
      expect(r.status).toBe(200)
      expect(String(r.headers['content-type'])).toContain(type)
    }
  })
})

// Agents and conversations in the shapes Letta writes them (examples/sample.ndjson): the
// agent page shows what the record says and how many of its repo's prompts are current, a
// prompt page its agent's model and its conversation's state, and records as broken as a
// user may write them are shown clipped and break nothing.
describe('Letta-shaped agents and conversations', () => {
  const LETTA = 'did:plc:lettalettalettalettaxxxx'
  const OTHER = 'did:plc:otherotherotherotherxxxx'
  const SYSTEM =
    'You are Juno-97.\n<base_instructions>\nBe kind.\n</base_instructions>\n{CORE_MEMORY}'
  const LONG_NAME = `agent ${'n'.repeat(10_000)}`
  const agentRkey = 'juno'
  const agentUri = `at://${LETTA}/${NSIDS.agent}/${agentRkey}`
  const KEYS = ['memStale', 'tmplStale', 'current', 'hidden', 'missing', 'other', 'bad'] as const
  const k = {} as Record<(typeof KEYS)[number], string>
  const bad = { system: 'badsystem', tags: 'badtags', long: 'longname' }
  const memfs = (c: string) => c.repeat(40)

  beforeAll(async () => {
    const { w, deps } = s
    const agent = (rkey: string, fields: Record<string, unknown>) =>
      w.commit({
        did: LETTA,
        collection: NSIDS.agent,
        rkey,
        record: { $type: NSIDS.agent, ...fields },
      })
    for (const key of KEYS) k[key] = w.tid()
    const prompt = (rkey: string, fields: Record<string, unknown>, did = LETTA) =>
      w.prompt({
        did,
        rkey,
        fields: {
          agent: agentUri,
          rawSystemHash: sha256(SYSTEM),
          memfsRevision: memfs('a'),
          ...fields,
        },
      })
    const conversation = (rkey: string, extra: Record<string, unknown> = {}, did = LETTA) =>
      w.conversation({
        did,
        rkey,
        record: {
          $type: NSIDS.conversation,
          agent: agentUri,
          id: `conv-${rkey}`,
          agent_id: 'agent-juno',
          in_context_message_ids: ['message-1', 'message-2'],
          ...extra,
        },
      })
    await apply(deps, [
      agent(agentRkey, {
        id: 'agent-juno',
        name: 'Juno-97',
        description: 'Juno-97, a companion that remembers',
        system: SYSTEM,
        tags: ['support', 'demo'],
        model: 'anthropic/claude-sonnet-4-5',
        model_settings: { provider_type: 'anthropic', max_output_tokens: 4096 },
      }),
      // Compiled first from an older memory: a later compile of the agent differs.
      conversation(k.memStale),
      prompt(k.memStale, { memfsRevision: memfs('0') }),
      conversation(k.tmplStale),
      prompt(k.tmplStale, { rawSystemHash: sha256('an older template') }),
      conversation(k.current),
      prompt(k.current, {}),
      conversation(k.hidden, { hidden: true, tags: ['archived'] }),
      prompt(k.hidden, {}),
      prompt(k.missing, {}),
      // Another repo's prompt naming this agent: counted by flag, not among its repo's.
      conversation(k.other, {}, OTHER),
      prompt(k.other, {}, OTHER),
    ])
    // The broken agents last, so the overview's recent changes show them.
    await apply(deps, [
      agent(bad.system, { name: 'system-is-a-number', system: 42 }),
      agent(bad.tags, { name: 'tags-is-a-string', system: SYSTEM, tags: 'not-a-list' }),
      agent(bad.long, { name: LONG_NAME, system: SYSTEM, tags: ['x'] }),
      conversation(k.bad),
      prompt(k.bad, { agent: `at://${LETTA}/${NSIDS.agent}/${bad.long}` }),
    ])
  })

  const flagsOf = async (did: string, rkey: string) =>
    (await api(`/v1/prompts/${enc(did)}/${rkey}`)).body.flags as string[]
  const listOf = (flag?: string) =>
    `/prompts?${new URLSearchParams({ did: LETTA, agent: agentUri, ...(flag ? { flag } : {}) })}`

  it('the agent page shows its name, description, model, tags, template hash and N of M prompts current', async () => {
    // What the index decided of each prompt, which the count below is of.
    expect(await flagsOf(LETTA, k.memStale)).toEqual(['staleMemory'])
    expect(await flagsOf(LETTA, k.tmplStale)).toEqual(['staleTemplate'])
    expect(await flagsOf(LETTA, k.current)).toEqual([])
    expect(await flagsOf(LETTA, k.missing)).toEqual(['orphaned'])
    const r = await page(`/agents/${enc(LETTA)}/${agentRkey}`)
    expect(r.status).toBe(200)
    expect(r.body).toContain('<h1>Agent “Juno-97”</h1>')
    expect(r.body).toContain('<dt>name</dt><dd>Juno-97</dd>')
    expect(r.body).toContain('<dt>description</dt><dd>Juno-97, a companion that remembers</dd>')
    expect(r.body).toContain('<dt>model</dt><dd><code>anthropic/claude-sonnet-4-5</code></dd>')
    expect(r.body).toContain('<code class="tag">support</code> <code class="tag">demo</code>')
    expect(r.body).toContain('<dt>Letta id</dt><dd><code>agent-juno</code></dd>')
    expect(r.body).toContain(
      `<dt>template hash</dt><dd><code class="hash">${sha256(SYSTEM)}</code></dd>`,
    )
    // Of the five in its repo, two are stale; the other repo's prompt is not among them.
    expect(r.body).toContain(`<a href="${escaped(listOf())}">3 of 5 prompts current</a>`)
    expect(r.body).toContain(`<a href="${escaped(listOf('staleTemplate'))}">1 staleTemplate</a>`)
    expect(r.body).toContain(`<a href="${escaped(listOf('staleMemory'))}">1 staleMemory</a>`)
    expect(r.body).toMatch(/<a href="[^"]+">all<\/a><\/th><td class="num">6<\/td>/)
    // The links list exactly those prompts.
    expect(rkeysOf((await page(listOf('staleTemplate'))).body)).toEqual([k.tmplStale])
    expect(rkeysOf((await page(listOf())).body).sort()).toEqual(
      [k.memStale, k.tmplStale, k.current, k.hidden, k.missing].sort(),
    )
  })

  it('a prompt page shows its agent by name and model, and its conversation as it exists, hidden or missing', async () => {
    const agentLinkHtml = `<a class="agent-name" href="/agents/${enc(LETTA)}/${agentRkey}" title="${agentUri}">Juno-97</a>`
    const model = '<span class="model">model <code>anthropic/claude-sonnet-4-5</code></span>'
    const states: Array<[string, string]> = [
      [k.current, `">conversation ${k.current}</a> <span class="muted">exists</span>`],
      [
        k.hidden,
        `">conversation ${k.hidden}</a> <span class="warn">hidden (its record says hidden: true)</span>`,
      ],
      [k.missing, '<span class="warn">missing: no conversation record in this slot</span>'],
    ]
    for (const [rkey, state] of states) {
      const r = await page(`/prompts/${enc(LETTA)}/${rkey}`)
      expect(r.status, rkey).toBe(200)
      expect(r.body, rkey).toContain(`<dt>agent</dt><dd>${agentLinkHtml} ${model}</dd>`)
      expect(r.body, rkey).toContain(`<dt>conversation</dt><dd>`)
      expect(r.body, rkey).toContain(state)
    }
    // The hidden conversation's own page says so, and names its agent.
    const c = await page(`/conversations/${enc(LETTA)}/${k.hidden}`)
    expect(c.status).toBe(200)
    expect(c.body).toContain(
      '<dt>hidden</dt><dd><span class="warn">yes (its record says hidden: true)</span></dd>',
    )
    expect(c.body).toContain(`<dt>agent</dt><dd>${agentLinkHtml}</dd>`)
    expect(c.body).toContain('<dt>messages in context</dt><dd>2</dd>')
  })

  it('agents whose system is not a string, whose tags are not a list, or whose name is 10,000 characters render with names clipped', async () => {
    const clippedName = `${LONG_NAME.slice(0, 99)}…`
    const sys = await page(`/agents/${enc(LETTA)}/${bad.system}`)
    expect(sys.status).toBe(200)
    expect(sys.body).toContain('no template hash (system is not a string)')
    expect(sys.body).not.toContain('System template')
    const tags = await page(`/agents/${enc(LETTA)}/${bad.tags}`)
    expect(tags.status).toBe(200)
    expect(tags.body).not.toContain('<dt>tags</dt>')
    expect(tags.body).toContain(`<code class="hash">${sha256(SYSTEM)}</code>`)
    const long = await page(`/agents/${enc(LETTA)}/${bad.long}`)
    expect(long.status).toBe(200)
    expect(long.body).toContain(`<title>Agent ${clippedName}`)
    expect(long.body).toContain(`<h1>Agent “${clippedName}”</h1>`)
    expect(long.body).toContain(
      `<dt>name</dt><dd>${clippedName} <span class="muted">(10006 characters`,
    )
    // The whole name is only in the record's JSON.
    expect(long.body.split(LONG_NAME)).toHaveLength(2)
    expect(long.body.indexOf(LONG_NAME)).toBeGreaterThan(long.body.indexOf('Record JSON'))
    // Lists, the overview's recent changes and the prompt page show it clipped.
    const link = `href="/agents/${enc(LETTA)}/${bad.long}"`
    for (const url of [`/prompts?did=${enc(LETTA)}`, '/', `/prompts/${enc(LETTA)}/${k.bad}`]) {
      const r = await page(url)
      expect(r.status, url).toBe(200)
      expect(r.body, url).toContain(link)
      expect(r.body, url).toContain(clippedName)
      expect(r.body, url).not.toContain(LONG_NAME.slice(0, 200))
    }
    // Its prompts' list filtered on it names it in the caption, clipped.
    const filtered = await page(`/prompts?agent=${enc(`at://${LETTA}/${NSIDS.agent}/${bad.long}`)}`)
    expect(filtered.body).toContain(`<caption>Prompts of agent “${clippedName}”`)
  })
})

void NSIDS
