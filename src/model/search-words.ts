// What search calls a word, on both sides: runs of letters and digits, lowercased, each
// once. The indexer stores a prompt's words as a tsvector literal (so Postgres's own parser,
// with its different idea of a word, never runs) and the API splits a query the same way,
// so a word found in one is found in the other.

/** Longer runs are not words anyone searches for (and a tsvector lexeme is capped at 2 KB). */
export const MAX_WORD_CHARS = 100
/** Content beyond this is not searched: all of any valid prompt (200,000 bytes). */
const MAX_CONTENT_CHARS = 200_000

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u

/** Code units of the letter or digit at `i` (2 for a surrogate pair), 0 for anything else. */
function wordCharWidth(s: string, i: number): number {
  const code = s.charCodeAt(i)
  // ASCII, nearly all of a prompt, without the regex.
  if (code < 128) return (code >= 97 && code <= 122) || (code >= 48 && code <= 57) ? 1 : 0
  const point = s.codePointAt(i) ?? code
  if (!LETTER_OR_DIGIT.test(String.fromCodePoint(point))) return 0
  return point > 0xffff ? 2 : 1
}

/**
 * The distinct words of `text` up to `maxChars` each, in order of first appearance: the runs
 * `/[\p{L}\p{N}]+/gu` matches in the lowercased text, found without the regex engine, which
 * took a third of the indexer's CPU (bench/README.md, "Search words").
 */
function scanWords(text: string, maxChars: number): string[] {
  const s = text.toLowerCase()
  const words = new Set<string>()
  let i = 0
  while (i < s.length) {
    const start = i
    let width = wordCharWidth(s, i)
    while (width > 0) {
      i += width
      width = i < s.length ? wordCharWidth(s, i) : 0
    }
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
