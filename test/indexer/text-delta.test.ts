import { describe, expect, it } from 'vitest'
import { applyDelta, encodeDelta } from '../../src/model/text-delta.ts'
import { World } from '../helpers/events.ts'

// Line deltas (model/text-delta.ts): whatever the two texts, a delta that is stored turns the
// base into the next text exactly; a recompile that changes a few lines is stored as those
// lines and two counts of kept text, not as the text.

const w = new World()
const prompt = (i: number) =>
  w.promptRecord('did:plc:textdeltaaaaaaaaaaaaaaaa', w.tid(), {
    coreMemory: `<memory>persona ${i}\nhuman: likes ${'tea '.repeat(i % 7)}</memory>`,
  }).content as string
const long = (n: number) =>
  Array.from({ length: n }, (_, i) => `line ${i}: ${'the template says this '.repeat(3)}`).join(
    '\n',
  )

const pairs: Array<[string, string, string]> = [
  ['identical', long(50), long(50)],
  ['a line changed in the middle', long(80), long(80).replace('line 40:', 'line forty:')],
  ['a line added at the end', long(30), `${long(30)}\nline 30: new`],
  ['a line added at the start', long(30), `line -1: new\n${long(30)}`],
  ['the last line grown', long(30), `${long(30)} and more`],
  ['the first line shrunk', long(30), long(30).slice(3)],
  ['a trailing newline added', long(20), `${long(20)}\n`],
  [
    'CRLF lines',
    long(20).replaceAll('\n', '\r\n'),
    long(20).replaceAll('\n', '\r\n').replace('line 9', 'nine'),
  ],
  ['no newline at all', 'one line of text that changes here', 'one line of text that changed here'],
  ['from empty', '', long(5)],
  ['to empty', long(5), ''],
  ['a repeated line removed', 'a\nb\nb\nb\nc', 'a\nb\nb\nc'],
  ['astral and combining text', `😀 x\u0301\n${long(10)}\n𝔘𝔫𝔦`, `😀 x\u0301\n${long(10)}\n𝔘𝔫𝔦 ✓`],
  ['two prompts of the generator', prompt(1), prompt(2)],
]

describe('encodeDelta', () => {
  it.each(pairs)('%s: the delta, when there is one, gives the next text back', (_, base, next) => {
    const body = encodeDelta(base, next)
    if (body !== null) expect(applyDelta(base, body)).toBe(next)
  })

  it('stores a small change as the changed lines and two counts of kept text', () => {
    const base = long(200)
    const next = base.replace('line 100:', 'line one hundred:')
    const body = encodeDelta(base, next)
    expect(body).not.toBeNull()
    const ops = JSON.parse(body as string) as Array<number | string>
    const start = base.indexOf('line 100:')
    const end = base.indexOf('\n', start) + 1
    expect(ops).toEqual([
      start,
      -(end - start),
      next.slice(start, end + next.length - base.length),
      base.length - end,
    ])
  })

  it('stores an identical text as one count', () => {
    expect(encodeDelta(long(10), long(10))).toBe(`[${long(10).length}]`)
  })

  it('gives up on a rewrite (more edits than the bound) and on a delta no smaller', () => {
    const base = long(400)
    const rewritten = base.replaceAll('line', 'LINE')
    expect(encodeDelta(base, rewritten)).toBeNull()
    expect(encodeDelta('a', 'b')).toBeNull()
  })
})
