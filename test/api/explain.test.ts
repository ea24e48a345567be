import { type SQL, sql } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Database, rows } from '../../src/db/client.ts'
import { handleQuery } from '../../src/db/read/accounts.ts'
import { changesQuery } from '../../src/db/read/changes.ts'
import type { ListPosition } from '../../src/db/read/list-order.ts'
import { type ListFlag, promptAnswersQuery, promptListQuery } from '../../src/db/read/prompts.ts'
import {
  agentPromptCountsQuery,
  agentRecordQuery,
  conversationQuery,
} from '../../src/db/read/records.ts'
import { promptStateQuery, revisionsQuery } from '../../src/db/read/revisions.ts'
import { searchQuery } from '../../src/db/read/search.ts'
import { revisionPairQuery, revisionQuery, textChainsQuery } from '../../src/db/revision-texts.ts'
import { FILTER_NAMES } from '../../src/model/flags.ts'
import { LIST_SORTS, type ListSort } from '../../src/model/list-sort.ts'
import { createTestDatabase, usingPostgres } from '../helpers/db.ts'
import { NSIDS } from '../helpers/events.ts'

// Every lookup and list the API issues must be served by an index. Postgres only: the
// planner only cares once tables are large, so this one test seeds them directly with
// generate_series (the indexing core would take minutes for 80 000 prompts) and ANALYZEs.

const PROMPTS = 80_000
const DIDS = 2_000
const did = (i: number) => `did:plc:seed${String(i % DIDS).padStart(6, '0')}`
const rkey = (i: number) => `3l${i.toString(16).padStart(11, '0')}`

let db: Database
/** The seeded rows' one index time, in µs (they were all written by one statement). */
let indexedUs: string

describe.skipIf(!usingPostgres())('query plans on a large table (Postgres)', () => {
  beforeAll(async () => {
    db = await createTestDatabase()
    const didExpr = sql.raw(`'did:plc:seed' || lpad((i % ${DIDS})::text, 6, '0')`)
    const rkeyExpr = sql.raw(`'3l' || lpad(to_hex(i), 11, '0')`)
    await db.rows(sql`INSERT INTO accounts (did, active, status, handle, updated_at)
      SELECT ${didExpr}, i % 100 <> 7, NULL, 'user' || i || '.test', now() FROM generate_series(0, ${DIDS - 1}) i`)
    await db.rows(sql`INSERT INTO accounts (did, active, updated_at)
      SELECT 'did:plc:other' || i, true, now() FROM generate_series(1, 30000) i`)
    await db.rows(sql`INSERT INTO prompts (did, rkey, rev, cid, record, deleted, hidden, indexed_at, flags, base_flags,
        content_bytes, agent_uri, agent_did, agent_rkey, compiled_us, evidence)
      SELECT ${didExpr}, ${rkeyExpr}, ${rkeyExpr}, 'bafyseed' || i,
        jsonb_build_object('$type', ${NSIDS.prompt}::text, 'content', 'common words w' || (i % 100) || ' r' || i || ' ' || repeat('x', 150), 'coreMemory', 'x'),
        i % 50 = 0, (i % ${DIDS}) % 100 = 7, now(),
        (ARRAY[0,0,0,0,0,0,1,2,12,48])[i % 10 + 1], 0, 200,
        'at://' || ${didExpr} || '/' || ${NSIDS.agent}::text || '/agent' || (i % 20),
        ${didExpr}, 'agent' || (i % 20), i, true
      FROM generate_series(1, ${PROMPTS}) i`)
    await db.rows(sql`INSERT INTO conversations (did, rkey, rev, cid, record, indexed_at, hidden)
      SELECT ${didExpr}, ${rkeyExpr}, ${rkeyExpr}, 'bafyconv' || i, '{}'::jsonb, now(), (i % ${DIDS}) % 100 = 7
      FROM generate_series(1, ${PROMPTS}) i WHERE i % 10 <> 6`)
    await db.rows(sql`INSERT INTO agents (did, rkey, rev, cid, record, indexed_at)
      SELECT ${didExpr}, 'agent' || (i / ${DIDS}), '3labc', 'bafyagent' || i, '{}'::jsonb, now()
      FROM generate_series(0, ${DIDS * 20 - 1}) i`)
    await db.rows(sql`INSERT INTO prompt_revisions (did, rkey, rev, cid, seen_at)
      SELECT ${didExpr}, ${rkeyExpr}, ${rkeyExpr}, 'bafyseed' || i, now() FROM generate_series(1, ${PROMPTS}) i`)
    await db.rows(sql`INSERT INTO revision_texts (did, hash, base, depth, length, body)
      SELECT ${didExpr}, 'h' || i, CASE WHEN i % 10 = 0 THEN NULL ELSE 'h' || (i - ${DIDS}) END, 0, 4, 'body'
      FROM generate_series(1, ${PROMPTS}) i`)
    await db.rows(sql`INSERT INTO changes (did, collection, rkey, op, cid, flags, at)
      SELECT ${didExpr}, ${NSIDS.prompt}, ${rkeyExpr}, 'upsert', 'bafyseed' || i, 0, now()
      FROM generate_series(1, ${PROMPTS * 2}) i`)
    // The contents above are ASCII words and spaces: split on anything else, they are the
    // words model/search-words.ts finds, as the indexer would have written them.
    await db.rows(sql`UPDATE prompts SET search_vector =
      array_to_tsvector(array_remove(regexp_split_to_array(lower(record->>'content'), '[^a-z0-9]+'), ''))`)
    await db.rows(sql`ANALYZE`)
    const [row] = await db.rows<{ us: string }>(
      sql`SELECT (extract(epoch FROM max(indexed_at)) * 1000000)::bigint::text AS us FROM prompts`,
    )
    indexedUs = row!.us
  })
  afterAll(async () => db?.close())

  const planText = (rows: Record<string, string>[]) =>
    rows.map((r) => Object.values(r)[0]).join('\n')
  const plan = async (q: SQL): Promise<string> =>
    planText(await db.rows<Record<string, string>>(sql`EXPLAIN ${q}`))

  /** The middle row's position in each order (the seeded rows share their sizes and counts). */
  const MID = 40_001
  const positionOf = (sort: ListSort): ListPosition => {
    const key = {
      created: null,
      compiled: String(MID),
      indexed: indexedUs,
      recompiles: '0',
      size: '200',
    }
    return { rkey: rkey(MID), did: did(MID), key: key[sort] }
  }

  const queries = (): Array<[string, SQL]> => {
    const out: Array<[string, SQL]> = []
    const after = positionOf('created')
    for (const sort of LIST_SORTS)
      for (const flag of [null, ...FILTER_NAMES] as Array<ListFlag | null>) {
        for (const withCursor of [false, true]) {
          for (const filter of ['none', 'did', 'agent', 'did+agent'] as const) {
            const name = `list sort=${sort} flag=${flag ?? '-'} cursor=${withCursor} filter=${filter}`
            out.push([
              name,
              promptListQuery({
                flag,
                did: filter.includes('did') ? did(17) : null,
                agent: filter.includes('agent') ? { did: did(17), rkey: 'agent17' } : null,
                sort,
                after: withCursor ? positionOf(sort) : null,
                take: 51,
              }),
            ])
          }
        }
      }
    // A lone lookup and a full batch (db/read/prompts.ts, ANSWER_BATCH: 16 keys).
    for (const n of [1, 16]) {
      const ids = Array.from({ length: n }, (_, j) => 1234 + j * 997)
      out.push([
        `prompt answers with their flag evidence, ${n} keys`,
        promptAnswersQuery(sql`${sql.param(ids.map(did))}`, sql`${sql.param(ids.map(rkey))}`),
      ])
    }
    out.push(['revision', revisionQuery(did(5), rkey(5), rkey(5))])
    out.push(['revision pair', revisionPairQuery(did(5), rkey(5), null)])
    out.push(['revision texts', textChainsQuery(did(5), ['h5', 'h2005'])])
    // One row, every row, and 1% of rows.
    for (const words of [['r40001'], ['common'], ['w7', 'common']]) {
      for (const flag of [null, 'orphaned', 'ok'] as Array<ListFlag | null>) {
        out.push([
          `search ${words.join('+')} flag=${flag ?? '-'}`,
          searchQuery({
            words,
            flag,
            did: null,
            agent: null,
            sort: 'created',
            after: null,
            take: 51,
          }),
        ])
      }
      out.push([
        `search ${words.join('+')} did+cursor`,
        searchQuery({
          words,
          flag: null,
          did: did(17),
          agent: null,
          sort: 'created',
          after,
          take: 51,
        }),
      ])
    }
    for (const sort of LIST_SORTS)
      out.push([
        `search common sort=${sort} cursor`,
        searchQuery({
          words: ['common'],
          flag: null,
          did: null,
          agent: null,
          sort,
          after: positionOf(sort),
          take: 51,
        }),
      ])
    out.push(['prompt state', promptStateQuery(did(5), rkey(5))])
    out.push(['revisions', revisionsQuery(did(5), rkey(5), null, 51)])
    out.push(['revisions before', revisionsQuery(did(5), rkey(5), rkey(5), 51)])
    out.push(['conversation', conversationQuery(did(9), rkey(9))])
    out.push(['agent record', agentRecordQuery(did(9), 'agent9')])
    out.push(['agent prompt counts', agentPromptCountsQuery(did(9), 'agent9')])
    out.push(['changes from 0', changesQuery(0, 500)])
    out.push(['changes from the middle', changesQuery(PROMPTS, 500)])
    out.push(['handle', handleQuery('user42.test')])
    return out
  }

  it('no lookup or list scans a record table sequentially', async () => {
    const failures: string[] = []
    const all = queries()
    expect(all.length).toBeGreaterThan(80)
    for (const [name, q] of all) {
      const p = await plan(q)
      if (
        /Seq Scan on (prompts|conversations|agents|changes|prompt_revisions|accounts|revision_texts)\b/.test(
          p,
        )
      )
        failures.push(`${name}:\n${p}`)
    }
    expect(failures, failures.join('\n\n')).toEqual([])
  })

  it('the lookup runs with a generic plan (db/client.ts) that still only probes indexes', async () => {
    // As db.read runs it: prepared once with its two arrays as parameters, planned once.
    const { sql: text } = new PgDialect().sqlToQuery(
      promptAnswersQuery(sql.placeholder('dids'), sql.placeholder('rkeys')),
    )
    const ids = [1234, 5678, 9012]
    const array = (xs: string[]) => sql.raw(`ARRAY[${xs.map((x) => `'${x}'`).join(',')}]`)
    const p = await db.transaction(async (tx) => {
      await rows(tx, sql`SET LOCAL plan_cache_mode = force_generic_plan`)
      await rows(tx, sql`PREPARE pav_answers(text[], text[]) AS ${sql.raw(text)}`)
      const plan = await rows<Record<string, string>>(
        tx,
        sql`EXPLAIN EXECUTE pav_answers(${array(ids.map(did))}, ${array(ids.map(rkey))})`,
      )
      await rows(tx, sql`DEALLOCATE pav_answers`)
      return planText(plan)
    })
    if (process.env.SHOW_PLANS) console.log(p)
    expect(p, p).toMatch(/Index Scan using \w+ on prompts p\b/)
    expect(p, p).not.toMatch(/Seq Scan|Hash Join|Sort\b/)
  })

  it('flag lists use their own partial index', async () => {
    const INDEX: Record<ListFlag, string> = {
      ok: 'prompts_ok_idx',
      orphaned: 'prompts_orphaned_idx',
      mismatched: 'prompts_mismatched_idx',
      staleTemplate: 'prompts_stale_template_idx',
      staleMemory: 'prompts_stale_memory_idx',
      coreMemoryDetached: 'prompts_detached_idx',
      invalid: 'prompts_invalid_idx',
    }
    for (const flag of FILTER_NAMES) {
      const p = await plan(
        promptListQuery({ flag, did: null, agent: null, sort: 'created', after: null, take: 51 }),
      )
      expect(p, p).toContain(`Index Scan using ${INDEX[flag]}`)
    }
    const all = await plan(
      promptListQuery({
        flag: null,
        did: null,
        agent: null,
        sort: 'created',
        after: null,
        take: 51,
      }),
    )
    expect(all, all).toContain('Index Scan using prompts_page_idx')
    if (process.env.SHOW_PLANS) {
      console.log(all)
      console.log(await plan(changesQuery(1000, 500)))
    }
  })

  it('every other order pages along its own index, a cursor bounding the scan inside a run of ties', async () => {
    for (const sort of LIST_SORTS.filter((x) => x !== 'created')) {
      const q = (after: ListPosition | null) =>
        promptListQuery({ flag: null, did: null, agent: null, sort, after, take: 51 })
      const first = await plan(q(null))
      expect(first, first).toContain(`Index Scan using prompts_${sort}_page_idx`)
      // Half the rows precede the cursor, most in its run of equal keys: read, they would
      // show as rows the scan removed; bounded by the row comparison, none are read.
      const analyzed = planText(
        await db.rows<Record<string, string>>(
          sql`EXPLAIN (ANALYZE, COSTS OFF) ${q(positionOf(sort))}`,
        ),
      )
      if (process.env.SHOW_PLANS) console.log(analyzed)
      expect(analyzed, analyzed).toContain(`Index Scan using prompts_${sort}_page_idx`)
      expect(analyzed, analyzed).toMatch(/Index Cond: \(ROW\(/)
      expect(analyzed, analyzed).not.toContain('Rows Removed by Filter')
    }
  })

  it('a search for a rare word probes the GIN index, one for a common word walks the page index', async () => {
    const rare = await plan(
      searchQuery({
        words: ['r40001'],
        flag: null,
        did: null,
        agent: null,
        sort: 'created',
        after: null,
        take: 51,
      }),
    )
    expect(rare, rare).toContain('prompts_search_idx')
    const common = await plan(
      searchQuery({
        words: ['common'],
        flag: null,
        did: null,
        agent: null,
        sort: 'created',
        after: null,
        take: 51,
      }),
    )
    expect(common, common).toContain('Index Scan using prompts_page_idx')
  })
})
