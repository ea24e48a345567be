import { describe, expect, it } from 'vitest'
import { contentWords, MAX_WORD_CHARS, wordsOf } from '../../src/model/search-words.ts'

// Search words: the distinct runs of letters and digits of the lowercased text, in order of
// first appearance (model/search-words.ts), pinned on the texts that tell definitions apart.

describe('wordsOf', () => {
  it('keeps each word once, in order of first appearance, lowercased', () => {
    expect(wordsOf('Tea, tea and TEA; coffee and tea')).toEqual(['tea', 'and', 'coffee'])
  })

  it('splits on every non-letter, non-digit: marks, emoji, lone surrogates, punctuation', () => {
    expect(wordsOf('a\u0301b \ud800c 😀d—e_f-g.h')).toEqual([
      'a',
      'b',
      'c',
      'd',
      'e',
      'f',
      'g',
      'h',
    ])
    expect(wordsOf('ΣΑΣ ΌΣΟΣ ﬀ Ⅻ ٣ 中文')).toEqual(['σας', 'όσος', 'ﬀ', 'ⅻ', '٣', '中文'])
  })

  it('pins the words of a prompt line', () => {
    expect(wordsOf('You are X — the CORE core of 2025-11-30T00:00:00.000Z 😀 Zürich İ')).toEqual([
      'you',
      'are',
      'x',
      'the',
      'core',
      'of',
      '2025',
      '11',
      '30t00',
      '00',
      '000z',
      'zürich',
      'i',
    ])
    expect(wordsOf('')).toEqual([])
    expect(wordsOf(' — 😀 ')).toEqual([])
  })

  it('leaves out words longer than search takes, from content', () => {
    const long = 'x'.repeat(MAX_WORD_CHARS + 1)
    expect(contentWords(`short ${long} ${'y'.repeat(MAX_WORD_CHARS)}`)).toEqual([
      'short',
      'y'.repeat(MAX_WORD_CHARS),
    ])
    expect(contentWords(null)).toEqual([])
  })

  it('finds what the definition, a Unicode regex over the lowercased text, finds', () => {
    const definition = (t: string) => [...new Set(t.toLowerCase().match(/[\p{L}\p{N}]+/gu))]
    const pieces = ['a', 'Z', '9', ' ', '-', 'é', 'İ', 'ß', 'Σ', 'ς', '\u0301', '😀', '𝒳', '\ud800']
    const more = ['\udc00', '中', '٣', 'Ⅻ', 'ﬀ', 'K', 'µ', '²', '½', '©', '\u00a0', '\n', '_']
    const long = ['x'.repeat(99), 'y'.repeat(101)]
    const pool = [...pieces, ...more, ...long]
    let seed = 1
    // A fixed-seed LCG; its high bits, since the low bits of a power-of-two modulus cycle fast.
    const below = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return Math.floor((seed / 2 ** 31) * n)
    }
    for (let k = 0; k < 10_000; k++) {
      let text = ''
      for (let j = below(20); j > 0; j--) text += pool[below(pool.length)]
      expect(wordsOf(text), JSON.stringify(text)).toEqual(definition(text))
      const searched = definition(text).filter((w) => w.length <= MAX_WORD_CHARS)
      expect(contentWords(text), JSON.stringify(text)).toEqual(searched)
    }
  })
})
