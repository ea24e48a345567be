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
})
