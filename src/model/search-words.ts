// What search calls a word, on both sides: runs of letters and digits, lowercased. The
// indexer turns a prompt's content into its set of words (prompts.search_vector, built
// from them as a tsvector literal, so Postgres's text parser never runs on ingest: it costs
// milliseconds per 10 KB, several times the rest of a write), and the API splits a query
// the same way, so a word found in one is found in the other.

/** One letter or digit: what `[\p{L}\p{N}]+` (the definition) matches a run of. */
const WORD_CHAR = /^[\p{L}\p{N}]$/u
/** Longer runs are not words anyone searches for (and a tsvector lexeme is capped at 2 KB). */
export const MAX_WORD_CHARS = 100
/** Content beyond this is not searched: all of any valid prompt (200,000 bytes). */
const MAX_CONTENT_CHARS = 200_000

// The scan below is the regex `[\p{L}\p{N}]+` by hand: a Unicode property regex over 10 KB
// of text was the indexer's largest single cost (about a sixth of its CPU in a profile of
// bench:ingest), and a table for ASCII with a bounded cache for the rest takes half of that.
const ASCII_WORD = Uint8Array.from({ length: 128 }, (_, c) =>
  WORD_CHAR.test(String.fromCharCode(c)) ? 1 : 0,
)
const wideCache = new Map<number, boolean>()
const WIDE_CACHE_MAX = 65_536

function isWideWordChar(cp: number): boolean {
  let yes = wideCache.get(cp)
  if (yes === undefined) {
    yes = WORD_CHAR.test(String.fromCodePoint(cp))
    if (wideCache.size < WIDE_CACHE_MAX) wideCache.set(cp, yes)
  }
  return yes
}

export function wordsOf(text: string): string[] {
  const t = text.toLowerCase()
  const words = new Set<string>()
  let start = -1
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i)
    let isWord: boolean
    let width = 1
    if (c < 128) isWord = ASCII_WORD[c] === 1
    else {
      const cp = t.codePointAt(i) as number
      if (cp > 0xffff) width = 2
      isWord = isWideWordChar(cp)
    }
    if (isWord) {
      if (start < 0) start = i
    } else if (start >= 0) {
      words.add(t.slice(start, i))
      start = -1
    }
    i += width - 1
  }
  if (start >= 0) words.add(t.slice(start))
  return [...words]
}

/** The distinct words of content that search indexes. */
export function contentWords(content: string | null): string[] {
  if (content === null) return []
  return wordsOf(content.slice(0, MAX_CONTENT_CHARS)).filter((w) => w.length <= MAX_WORD_CHARS)
}
