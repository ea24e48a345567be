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

// The definition, literally: `[...new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu))]`.
// Search words are the indexer's largest single cost, so they are found in one pass here.
// Measured on the bench's prompts: a Unicode property regex over 10 KB of text took about
// a sixth of the indexer's CPU, lowercasing a whole prompt (a two-byte string as soon as
// it holds one em dash) a quarter of what a hand-written scan then cost, and a Set of
// every word's slice most of the rest. So the scan lowercases character by character as
// it hashes, and slices a word only where it first appears.
//
// Lowercasing character by character is lowercasing the text, except for the few
// characters whose lowercase depends on their neighbours (a final sigma) or is longer than
// they are (U+0130 becomes i and a combining dot, which is no letter): a text with one of
// those, or with a character lowercasing would turn into or out of a letter, takes the
// definition's own route instead (wordsOfLowercased).

/** What a character is to the scan, with the UTF-16 unit it lowercases to (a BMP one). */
const SEPARATOR = 1 << 16
const WORD = 2 << 16
/** A letter or digit of two UTF-16 units that lowercasing leaves alone. */
const WORD_PAIR = 3 << 16
/** A separator of two UTF-16 units. */
const SEPARATOR_PAIR = 4 << 16
/** Lowercasing it needs its context, or changes its length or what it is: the slow route. */
const COMPLEX = 5 << 16
const KIND = 7 << 16
const UNIT = 0xffff

function classify(cp: number): number {
  const ch = String.fromCodePoint(cp)
  const lower = ch.toLowerCase()
  const word = WORD_CHAR.test(ch)
  // Σ: the one letter whose lowercase depends on whether a letter follows.
  if (cp === 0x3a3 || lower.length !== ch.length || WORD_CHAR.test(lower) !== word) return COMPLEX
  if (ch.length === 2) {
    if (lower !== ch) return COMPLEX
    return word ? WORD_PAIR : SEPARATOR_PAIR
  }
  return (word ? WORD : SEPARATOR) | lower.charCodeAt(0)
}

/**
 * Every BMP character's class once asked for (0: not yet; 256 KB, a Map lookup per
 * character cost more than the rest of the scan), and a bounded cache of the others seen.
 */
const BMP = new Int32Array(0x10000)
for (let c = 0; c < 128; c++) BMP[c] = classify(c)
const CACHE_MAX = 65_536
const astral = new Map<number, number>()

function classOf(t: string, i: number, c: number): number {
  const k = BMP[c]
  if (k !== 0) return k
  if (c >= 0xd800 && c < 0xe000) return astralClass(t.codePointAt(i) as number)
  BMP[c] = classify(c)
  return BMP[c]
}

function astralClass(cp: number): number {
  let k = astral.get(cp)
  if (k === undefined) {
    k = classify(cp)
    if (astral.size < CACHE_MAX) astral.set(cp, k)
  }
  return k
}

/** The distinct words of `text`, in order of first appearance. */
export function wordsOf(text: string): string[] {
  return scanWords(text) ?? wordsOfLowercased(text.toLowerCase())
}

/** The one-pass scan; null when the text holds a COMPLEX character. */
function scanWords(t: string): string[] | null {
  const found = new WordTable(t)
  let i = 0
  while (i < t.length) {
    const kind = classOf(t, i, t.charCodeAt(i)) & KIND
    if (kind === WORD || kind === WORD_PAIR) i = scanWord(t, i, found)
    else if (kind === COMPLEX) return null
    else i += kind === SEPARATOR_PAIR ? 2 : 1
    if (i < 0) return null
  }
  return found.words
}

const FNV_OFFSET = 0x811c9dc5 | 0
const FNV_PRIME = 0x01000193

/**
 * Scans the word at `start` into `found`, hashing its lowercased units (FNV-1a) as it goes;
 * returns where it ends, or -1 at a COMPLEX character. The state is locals: this loop runs
 * once per character of every prompt.
 */
function scanWord(t: string, start: number, found: WordTable): number {
  let hash = FNV_OFFSET
  let changed = false
  let i = start
  for (; i < t.length; i++) {
    const c = t.charCodeAt(i)
    const k = classOf(t, i, c)
    const kind = k & KIND
    if (kind === WORD) {
      const lower = k & UNIT
      changed ||= lower !== c
      hash = Math.imul(hash ^ lower, FNV_PRIME)
    } else if (kind === WORD_PAIR) {
      // Caseless (else COMPLEX): both units hash as they are.
      hash = Math.imul(Math.imul(hash ^ c, FNV_PRIME) ^ t.charCodeAt(++i), FNV_PRIME)
    } else if (kind === COMPLEX) return -1
    else break
  }
  found.add(start, i, hash, changed)
  return i
}

/**
 * The words found so far, in an open-addressing table keyed by the hash of their
 * lowercased units: a repeated word costs a probe and a comparison, not a slice and a Set
 * lookup.
 */
class WordTable {
  readonly words: string[] = []
  readonly #t: string
  readonly #hashes: number[] = []
  /** Where each word first appears: a repeat spelled the same is found by comparing units. */
  readonly #firsts: number[] = []
  #slots: Int32Array

  constructor(t: string) {
    this.#t = t
    let size = 256
    while (size < t.length >> 3) size <<= 1
    this.#slots = new Int32Array(size)
  }

  /** The word t[start, end), of hash `h`, unless the table has it. */
  add(start: number, end: number, h: number, changed: boolean): void {
    const slots = this.#slots
    const mask = slots.length - 1
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const at = slots[slot]
      if (at === 0) {
        this.#add(start, end, h, changed, slot)
        return
      }
      if (this.#hashes[at - 1] === h && this.#same(at - 1, start, end)) return
    }
  }

  /** Is t[start, end) word k: spelled as where k first appears, or lowercased as k? */
  #same(k: number, start: number, end: number): boolean {
    const w = this.words[k]
    if (w.length !== end - start) return false
    const t = this.#t
    const first = this.#firsts[k]
    let j = 0
    while (j < w.length && t.charCodeAt(start + j) === t.charCodeAt(first + j)) j++
    return j === w.length || this.#spells(start, w)
  }

  #add(start: number, end: number, h: number, changed: boolean, slot: number): void {
    const raw = this.#t.slice(start, end)
    this.words.push(changed ? raw.toLowerCase() : raw)
    this.#hashes.push(h)
    this.#firsts.push(start)
    this.#slots[slot] = this.words.length
    if (this.words.length * 2 > this.#slots.length) this.#grow()
  }

  /** Does the text at `start`, lowercased, spell `w`? */
  #spells(start: number, w: string): boolean {
    const t = this.#t
    for (let j = 0; j < w.length; j++) {
      const c = t.charCodeAt(start + j)
      const lower = c >= 0xd800 && c < 0xe000 ? c : classOf(t, start + j, c) & UNIT
      if (lower !== w.charCodeAt(j)) return false
    }
    return true
  }

  #grow(): void {
    const slots = new Int32Array(this.#slots.length * 2)
    const mask = slots.length - 1
    for (let k = 0; k < this.#hashes.length; k++) {
      let slot = this.#hashes[k] & mask
      while (slots[slot] !== 0) slot = (slot + 1) & mask
      slots[slot] = k + 1
    }
    this.#slots = slots
  }
}

const wordChars = new Map<number, boolean>()

function isWordChar(cp: number): boolean {
  if (cp < 128) return (BMP[cp] & KIND) === WORD
  let yes = wordChars.get(cp)
  if (yes === undefined) {
    yes = WORD_CHAR.test(String.fromCodePoint(cp))
    if (wordChars.size < CACHE_MAX) wordChars.set(cp, yes)
  }
  return yes
}

/** The definition on an already lowercased text: the runs, deduplicated by a Set. */
function wordsOfLowercased(t: string): string[] {
  const words = new Set<string>()
  let start = -1
  for (let i = 0; i < t.length; i++) {
    const cp = t.codePointAt(i) as number
    const width = cp > 0xffff ? 2 : 1
    if (isWordChar(cp)) {
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
