import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import { splitRecord } from '../../src/model/record-parts.ts'
import { apply, NSIDS, World } from '../helpers/events.ts'
import { useIndexerDb } from '../helpers/indexer-db.ts'

// A prompt's texts travel as text parameters and its record is put together again in SQL
// (model/record-parts.ts, db/writes.ts): the stored jsonb, and the list form cut from it,
// must be exactly what parsing the whole record would have stored, whatever the record.

describe('splitRecord', () => {
  it('takes string content and coreMemory out and leaves the rest as JSON', () => {
    expect(splitRecord({ $type: 'x', content: 'a\nb ü', coreMemory: 'm', n: 1 })).toEqual({
      rest: '{"$type":"x","n":1}',
      content: 'a\nb ü',
      coreMemory: 'm',
    })
  })

  it('leaves a field that is not a string where it is', () => {
    expect(splitRecord({ content: 42, coreMemory: 'm' })).toEqual({
      rest: '{"content":42}',
      content: null,
      coreMemory: 'm',
    })
    expect(splitRecord({ content: 'c' })).toEqual({ rest: '{}', content: 'c', coreMemory: null })
  })

  it('takes nothing out of what is not an object', () => {
    for (const r of [null, undefined, 'content', 7, ['content', 'x']])
      expect(splitRecord(r)).toEqual({
        rest: JSON.stringify(r ?? null),
        content: null,
        coreMemory: null,
      })
  })

  it('keeps an own "__proto__" key a key', () => {
    const record = JSON.parse('{"__proto__": {"p": 1}, "content": "c"}')
    expect(splitRecord(record).rest).toBe('{"__proto__":{"p":1}}')
  })
})

describe('a prompt record stored from its parts equals the record parsed whole', () => {
  let db: Database
  let deps: IndexerDeps
  const w = new World()
  const did = 'did:plc:recordpartsaaaaaaaaaaaa'
  useIndexerDb((x) => {
    ;({ db, deps } = x)
  })

  const records = (rkey: string): unknown[] => {
    const valid = w.promptRecord(did, rkey)
    return [
      valid,
      { ...valid, content: 'quotes " and \\ backslashes\n\ttabs, ünï 🧠 \u2028 \ufffd' },
      { ...valid, content: 'x'.repeat(300_000), coreMemory: 'y'.repeat(50_000) },
      { ...valid, content: '', coreMemory: '' },
      { ...valid, coreMemory: undefined },
      { ...valid, content: { not: 'a string' } },
      { ...valid, content: ['a'], coreMemory: 5 },
      JSON.parse('{"__proto__": {"content": "inner"}, "content": "outer"}'),
      { $type: NSIDS.prompt },
      ['content', 'coreMemory'],
      'a string record',
    ]
  }

  it('for valid, invalid and hostile records', async () => {
    const rkeys = records('x').map(() => w.tid())
    const sent = rkeys.map((rkey, i) => ({ rkey, record: records(rkey)[i] }))
    await apply(
      deps,
      sent.map((s) => w.commit({ did, collection: NSIDS.prompt, rkey: s.rkey, record: s.record })),
    )
    for (const s of sent) {
      const [row] = await db.rows<{ same: boolean; list_same: boolean }>(sql`
        SELECT p.record = ${JSON.stringify(s.record)}::jsonb AS same,
          p.list_record = CASE WHEN jsonb_typeof(p.record) = 'object'
            THEN p.record - 'content' - 'coreMemory' ELSE p.record END AS list_same
        FROM prompts p WHERE p.did = ${did} AND p.rkey = ${s.rkey}`)
      expect({ rkey: s.rkey, ...row }).toEqual({ rkey: s.rkey, same: true, list_same: true })
    }
  })

  it('after a recompile in place and a delete', async () => {
    const rkey = w.tid()
    const first = w.promptRecord(did, rkey)
    const second = { ...first, content: `${first.content}\nrecompiled ✓`, coreMemory: 'new' }
    await apply(deps, [w.commit({ did, collection: NSIDS.prompt, rkey, record: first })])
    await apply(deps, [
      w.commit({ did, collection: NSIDS.prompt, rkey, op: 'update', record: second }),
    ])
    const read = () =>
      db.rows<{ record: unknown; list_record: unknown; deleted: boolean }>(
        sql`SELECT record, list_record, deleted FROM prompts WHERE did = ${did} AND rkey = ${rkey}`,
      )
    const { content: _c, coreMemory: _m, ...rest } = second
    expect(await read()).toEqual([{ record: second, list_record: rest, deleted: false }])
    await apply(deps, [w.commit({ did, collection: NSIDS.prompt, rkey, op: 'delete' })])
    expect(await read()).toEqual([{ record: null, list_record: null, deleted: true }])
  })
})
