import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { contentWords, MAX_WORD_CHARS, wordsOf } from '../../src/model/search-words.ts'

// Search words have one definition, the distinct runs of letters and digits of the
// lowercased text in order of first appearance; wordsOf computes it in one pass (a fast
// path for texts whose words are ASCII), and must give exactly what the definition gives.

const definition = (text: string): string[] => [
  ...new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []),
]

// Characters chosen for what they do to the scan: ASCII of every kind, inert non-ASCII
// separators (an em dash, an emoji, a lone surrogate), non-ASCII letters and digits, and
// characters that lowercasing changes in length or depends on context for.
const PIECES = [
  'a',
  'Z',
  'q',
  '7',
  ' ',
  '\n',
  '.',
  "'",
  '-',
  '_',
  '\t',
  '{',
  '}',
  'Ab',
  'CORE',
  'memory',
  '—',
  '😀',
  '\ud800',
  '\udc00',
  '«',
  '\u00a0',
  '\u200b',
  'é',
  'É',
  'ß',
  'ẞ',
  'ǅ',
  'İ',
  'Σ',
  'σ',
  'ς',
  'Ω',
  '中',
  '٣',
  'Ⅻ',
  '𝔘',
  '\u0307',
  '\u0301',
  'Ⓐ',
  'K',
  'ﬀ',
]
const textOf = fc
  .array(
    fc.oneof(
      fc.constantFrom(...PIECES),
      fc.string({ maxLength: 4 }),
      fc.string({ unit: 'grapheme', maxLength: 3 }),
      fc.string({ unit: 'binary', maxLength: 3 }),
    ),
    { maxLength: 80 },
  )
  .map((parts) => parts.join(''))

describe('wordsOf', () => {
  it('is the definition, on any text', () => {
    fc.assert(
      fc.property(textOf, (text) => {
        expect(wordsOf(text)).toEqual(definition(text))
      }),
      { numRuns: 5000 },
    )
  })

  it('is the definition on prompt-like texts, through the one-pass path and the general one', () => {
    const body =
      'You are an agent — kind, BRIEF and Careful.\n<memory rev="3f2a">Remember: tea > coffee 😀</memory>\n'
    for (const text of [
      body.repeat(200), // every word repeats: the table's probes and comparisons
      `${body}Zürich`, // a non-ASCII letter: the general path
      `${body}ΣΑΣ ΌΣΟΣ`, // final sigma depends on context
      `${body}İstanbul`, // lowercases to two code points, one a combining mark
      Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`).join(' '), // the table grows
    ]) {
      expect(wordsOf(text)).toEqual(definition(text))
    }
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
