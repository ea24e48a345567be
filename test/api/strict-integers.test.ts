import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { strictInteger } from '../../src/api/params.ts'
import { ALICE, type Seeded, useSeededApp } from './fixtures.ts'

// SPEC 6: a malformed limit (or since) is a 400. Ajv's type coercion used to turn `0x10`
// into 16, `1e2` into 100 and `+5` into 5. Integers in a query string are plain decimal
// digits, without leading zeros: one spelling per number.

let app: FastifyInstance
let s: Seeded
useSeededApp({}, (x) => {
  ;({ app, s } = x)
})

// As they appear in the URL: %2B is a literal '+', a bare '+' is a space.
const MALFORMED = [
  '0x10',
  '1e2',
  '%2B5',
  '+5',
  '%205',
  '5%20',
  '5.0',
  '05',
  '00',
  '-1',
  '-0',
  '',
  '%C2%BD',
  '%D9%A5',
  '1_000',
  'Infinity',
  'NaN',
  '9007199254740993',
  '18446744073709551616',
  '5,6',
]

describe('strictInteger', () => {
  it('takes plain decimal digits in range, and nothing else', () => {
    expect(strictInteger('0', 0, 10)).toBe(0)
    expect(strictInteger('10', 0, 10)).toBe(10)
    expect(strictInteger('9007199254740991', 0, Number.MAX_SAFE_INTEGER)).toBe(
      Number.MAX_SAFE_INTEGER,
    )
    expect(strictInteger('11', 0, 10)).toBe(null)
    for (const v of [
      '0x10',
      '1e2',
      '+5',
      ' 5',
      '5 ',
      '5.0',
      '05',
      '-1',
      '',
      '٥',
      '9007199254740993',
    ])
      expect(strictInteger(v, 0, Number.MAX_SAFE_INTEGER), JSON.stringify(v)).toBe(null)
  })
})

describe('numeric query parameters', () => {
  const routes = () => [
    (v: string) => `/v1/prompts?limit=${v}`,
    (v: string) => `/v1/prompts/${ALICE}/${s.alice.recompiled}/revisions?limit=${v}`,
    (v: string) => `/v1/changes?limit=${v}`,
    (v: string) => `/v1/changes?since=${v}`,
    (v: string) => `/v1/search?q=prompt&limit=${v}`,
  ]

  it('a malformed integer is a 400 naming the parameter, on every route', async () => {
    for (const route of routes()) {
      for (const v of MALFORMED) {
        const url = route(v)
        const res = await app.inject(url)
        expect(res.statusCode, url).toBe(400)
        expect(res.json(), url).toMatchObject({
          error: 'InvalidRequest',
          message: expect.stringMatching(/\b(limit|since)\b/),
        })
      }
    }
  })

  it('well-formed integers still work, and out-of-range ones are a 400', async () => {
    for (const url of [
      '/v1/prompts?limit=1',
      '/v1/prompts?limit=100',
      `/v1/prompts/${ALICE}/${s.alice.recompiled}/revisions?limit=2`,
      '/v1/changes?since=0&limit=1',
      '/v1/changes?since=9007199254740991',
      '/v1/search?q=prompt&limit=5',
    ]) {
      expect((await app.inject(url)).statusCode, url).toBe(200)
    }
    const page = await app.inject('/v1/prompts?limit=3')
    expect(page.json().items).toHaveLength(3)
    for (const url of ['/v1/prompts?limit=0', '/v1/prompts?limit=101', '/v1/changes?limit=0']) {
      const res = await app.inject(url)
      expect(res.statusCode, url).toBe(400)
      expect(res.json().message, url).toMatch(/\blimit must be an integer from 1 to \d+/)
    }
  })
})
