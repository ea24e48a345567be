// What search calls a word, on both sides: runs of letters and digits, lowercased, each
// once. The indexer stores a prompt's words as a tsvector literal (so Postgres's own parser,
// with its different idea of a word, never runs) and the API splits a query the same way,
// so a word found in one is found in the other.

/** Longer runs are not words anyone searches for (and a tsvector lexeme is capped at 2 KB). */
export const MAX_WORD_CHARS = 100
/** Content beyond this is not searched: all of any valid prompt (200,000 bytes). */
const MAX_CONTENT_CHARS = 200_000

const WORD_RUN = /[\p{L}\p{N}]+/uy

/** Where the run of letters and digits starting at `i` ends (`i` itself when there is none). */
function endOfRun(s: string, i: number): number {
  for (; i < s.length; i++) {
    const code = s.charCodeAt(i)
    if (code >= 128) {
      // Past ASCII, the regex takes the rest of the run (it knows Unicode's letters).
      WORD_RUN.lastIndex = i
      return WORD_RUN.test(s) ? WORD_RUN.lastIndex : i
    }
    if (!((code >= 97 && code <= 122) || (code >= 48 && code <= 57))) return i
  }
  return i
}

/**
 * The distinct words of `text` up to `maxChars` each, in order of first appearance: the runs
 * `/[\p{L}\p{N}]+/gu` matches in the lowercased text, with ASCII read by char code: the
 * regex alone was a third of the indexer's CPU (bench/README.md, "Search words").
 */
function scanWords(text: string, maxChars: number): string[] {
  const s = text.toLowerCase()
  const words = new Set<string>()
  let i = 0
  while (i < s.length) {
    const start = i
    i = endOfRun(s, i)
    if (i === start) i++
    else if (i - start <= maxChars) words.add(s.slice(start, i))
  }
  return [...words]
}

/** The distinct words of `text`, in order of first appearance. */
export function wordsOf(text: string): string[] {
  return scanWords(text, Number.POSITIVE_INFINITY)
}

/** The distinct words of content that search indexes. */
export function contentWords(content: string | null): string[] {
  if (content === null) return []
  return scanWords(content.slice(0, MAX_CONTENT_CHARS), MAX_WORD_CHARS)
}
