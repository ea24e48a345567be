import type { SQL } from 'drizzle-orm'
import type { Database } from '../client.ts'
import { sql } from '../orm.ts'
import { listOrder, sortKeyText } from './list-order.ts'
import { listWhere, type PromptListQuery, type PromptListRow, promptListSelect } from './prompts.ts'

// /v1/search: the list query of prompts.ts with one more predicate, the words of the
// query against prompts.search_vector (GIN, prompts_search_idx), and a snippet cut from
// content for the page's rows only. Same visibility, filters, orders and keyset bounds as lists.
// Raw `sql`: tsquery, LATERAL and regexp_instr are beyond the builder.

export interface SearchQuery extends PromptListQuery {
  /** Lowercase words of letters and digits, at least one: the caller tokenizes. */
  words: string[]
}

export type SearchRow = PromptListRow & { snippet: string | null }

/** Characters of content shown before the first match, and in all. */
const SNIPPET_LEAD = 80
const SNIPPET_CHARS = 300

export function searchQuery(q: SearchQuery): SQL {
  // The words are lexemes already (model/search-words.ts), quoted and ANDed into a tsquery that
  // Postgres takes as it is: letters and digits only, so nothing the client sends is query
  // syntax, and the snippet's regex has no metacharacters either.
  const tsq = sql`${q.words.map((w) => `'${w}'`).join(' & ')}::tsquery`
  const where = [...listWhere(q), sql`p.search_vector @@ ${tsq}`]
  const pattern = `\\m(${q.words.join('|')})\\M`
  // As in promptListQuery, the page is cut first; the snippet and existence checks run on
  // its rows only.
  const order = listOrder(q.sort)
  return sql`SELECT ${promptListSelect}, ${sortKeyText(q.sort)} AS "sortKey", s.start AS snippet_start,
      substr(c.content, s.start, ${SNIPPET_CHARS}) AS snippet
    FROM (
      SELECT * FROM prompts p
      WHERE ${sql.join(where, sql` AND `)}
      ORDER BY ${order}
      LIMIT ${q.take}
    ) p
    CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(p.record->'content') = 'string'
      THEN p.record->>'content' ELSE '' END AS content) c
    CROSS JOIN LATERAL (SELECT greatest(1,
      coalesce(regexp_instr(c.content, ${pattern}, 1, 1, 0, 'i'), 0) - ${SNIPPET_LEAD}) AS start) s
    ORDER BY ${order}`
}

export function readSearchPage(db: Database, q: SearchQuery): Promise<SearchRow[]> {
  // Not prepared: a generic plan would not see how selective the words are.
  return db.rows<SearchRow>(searchQuery(q))
}
