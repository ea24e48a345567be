// What search calls a word, on both sides: runs of letters and digits, lowercased. The
// indexer turns a prompt's content into its set of words (prompts.search_vector, built
// with array_to_tsvector, so Postgres's text parser never runs on ingest: it costs
// milliseconds per 10 KB, several times the rest of a write), and the API splits a query
// the same way, so a word found in one is found in the other.

const WORD = /[\p{L}\p{N}]+/gu
/** Longer runs are not words anyone searches for (and a tsvector lexeme is capped at 2 KB). */
export const MAX_WORD_CHARS = 100
/** Content beyond this is not searched: all of any valid prompt (200,000 bytes). */
const MAX_CONTENT_CHARS = 200_000

export function wordsOf(text: string): string[] {
  return [...new Set(text.toLowerCase().match(WORD) ?? [])]
}

/** The distinct words of content that search indexes. */
export function contentWords(content: string | null): string[] {
  if (content === null) return []
  return wordsOf(content.slice(0, MAX_CONTENT_CHARS)).filter((w) => w.length <= MAX_WORD_CHARS)
}
