// What search calls a word, on both sides: runs of letters and digits, lowercased, each
// once. The indexer stores a prompt's words as a tsvector literal (so Postgres's own parser,
// with its different idea of a word, never runs) and the API splits a query the same way,
// so a word found in one is found in the other.

/** Longer runs are not words anyone searches for (and a tsvector lexeme is capped at 2 KB). */
export const MAX_WORD_CHARS = 100
/** Content beyond this is not searched: all of any valid prompt (200,000 bytes). */
const MAX_CONTENT_CHARS = 200_000

/** The distinct words of `text`, in order of first appearance. */
export function wordsOf(text: string): string[] {
  return [...new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu))]
}

/** The distinct words of content that search indexes. */
export function contentWords(content: string | null): string[] {
  if (content === null) return []
  return wordsOf(content.slice(0, MAX_CONTENT_CHARS)).filter((w) => w.length <= MAX_WORD_CHARS)
}
