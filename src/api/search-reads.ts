import type { Database } from '../db/client.ts'
import { readSearchPage, type SearchQuery } from '../db/read/search.ts'
import type { Nsids } from '../model/nsids.ts'
import { MAX_WORD_CHARS, wordsOf } from '../model/search-words.ts'
import { badRequest } from './http-errors.ts'
import { type PromptListItem, pageOf, toListItem } from './prompt-views.ts'

// /v1/search: the words of `q`, then a list page with a snippet per item.

const MAX_WORDS = 16

/** The words search looks for: runs of letters and digits, lowercased, each once. */
export function searchWords(q: string): string[] {
  const words = wordsOf(q)
  if (words.length === 0)
    throw badRequest('q has no words to search for: give at least one word of letters or digits')
  if (words.length > MAX_WORDS) throw badRequest(`q has more than ${MAX_WORDS} words`)
  const long = words.find((w) => w.length > MAX_WORD_CHARS)
  if (long) throw badRequest(`q has a word longer than ${MAX_WORD_CHARS} characters`)
  return words
}

export interface Snippet {
  /** Plain text around the first match (not HTML: escape it to show it). */
  text: string
  /** Where the words of q occur in `text`, as UTF-16 offsets: [start, end). */
  matches: Array<{ start: number; end: number }>
}

export type SearchItem = PromptListItem & { snippet: Snippet }

function snippetOf(text: string, words: string[]): Snippet {
  const alternatives = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')
  const re = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${alternatives})(?![\\p{L}\\p{N}_])`, 'giu')
  const matches = [...text.matchAll(re)].map((m) => ({
    start: m.index,
    end: m.index + m[0].length,
  }))
  return { text, matches }
}

export async function searchPrompts(
  db: Database,
  nsids: Nsids,
  q: Omit<SearchQuery, 'take'>,
  limit: number,
): Promise<{ items: SearchItem[]; cursor?: string }> {
  const rows = await readSearchPage(db, { ...q, take: limit + 1 })
  return pageOf(rows, q.sort, limit, (r) => ({
    ...toListItem(r, nsids),
    snippet: snippetOf(r.snippet ?? '', q.words),
  }))
}
