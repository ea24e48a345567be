import fc from 'fast-check'
import type { RawRequest } from './raw-http.ts'

// Requests for every route the product serves (its own OpenAPI document, plus the routes
// it leaves out of it), with path segments, query values, methods and headers drawn from
// hostile sets and from fast-check's arbitrary strings. Real DIDs and rkeys of the index
// are mixed in, so lookups also hit records that exist with hostile options around them.

export interface Route {
  method: string
  path: string
  /** Query parameter names the route documents. */
  query: string[]
}

export interface FuzzInput {
  routes: Route[]
  dids: string[]
  rkeys: string[]
  adminToken: string
}

const NUMBERS = [
  '0',
  '1',
  '-1',
  '100',
  '101',
  '10001',
  '0x10',
  '1e2',
  '+5',
  ' 5',
  '5 ',
  '1.5',
  'NaN',
  'Infinity',
  '9007199254740993',
  '99999999999999999999',
  '٣',
  '',
  '00',
  '1_000',
]
const SEGMENTS = [
  '..',
  '.',
  '%2e%2e',
  '%2F',
  '%00',
  '%ff',
  '%',
  '%zz',
  'did:plc:',
  'did:web:localhost%3A1',
  'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa',
  'did:key:z',
  'DID:PLC:X',
  'alice.test',
  'a.b.c.d',
  'self',
  '3m6sm7ncql52b',
  'at:%2F%2F',
  'null',
  'undefined',
  '%F0%9F%98%80',
  '%C0%AF',
  '\\',
  'x'.repeat(3000),
  '%20',
  '~',
]
const METHODS = [
  'GET',
  'GET',
  'GET',
  'GET',
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'TRACE',
  'CONNECT',
  'FOO',
  'get',
  'PROPFIND',
]

const enc = (s: string) => encodeURIComponent(s)
const strings = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
)

function segment(input: FuzzInput): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(...input.dids).map(enc),
    fc.constantFrom(...input.rkeys).map(enc),
    fc.constantFrom(...SEGMENTS),
    strings.map(enc),
    fc.constantFrom(...NUMBERS).map(enc),
  )
}

function value(input: FuzzInput): fc.Arbitrary<string> {
  return fc
    .oneof(
      fc.constantFrom(...NUMBERS),
      fc.constantFrom(
        'orphaned',
        'mismatched',
        'ok',
        'invalid',
        'OK',
        'staleTemplate,orphaned',
        'nope',
      ),
      fc.constantFrom(...input.dids),
      fc
        .constantFrom(...input.dids)
        .map((d) => `at://${d}/xyz.quasigod.lab.letta.conversation/${input.rkeys[0]}`),
      fc.constantFrom(
        'at://',
        'at://did:plc:x/y/z/w',
        'letta://agents/x',
        'WyJ4Il0',
        'W10',
        'eyJ9',
        'bm90anNvbg',
        '!!!',
        'a'.repeat(2000),
      ),
      strings,
      fc.integer().map(String),
      fc.double().map(String),
    )
    .map(enc)
}

function query(route: Route, input: FuzzInput): fc.Arbitrary<string> {
  const names = [
    ...route.query,
    'limit',
    'cursor',
    'since',
    'x',
    '__proto__',
    'constructor',
    'uri[]',
  ]
  const pair = fc.tuple(fc.constantFrom(...names), value(input)).map(([k, v]) => `${enc(k)}=${v}`)
  return fc.oneof(
    fc.array(pair, { maxLength: 5 }).map((ps) => (ps.length ? `?${ps.join('&')}` : '')),
    fc.constantFrom('?', '?&&', '?=', '?limit', '?limit=1&limit=2', '?%', '?a=%zz'),
  )
}

function headers(input: FuzzInput): fc.Arbitrary<Record<string, string>> {
  const h = fc.constantFrom<[string, string]>(
    ['accept-encoding', 'br'],
    ['accept-encoding', 'gzip, deflate'],
    ['accept-encoding', 'identity;q=0, *;q=0'],
    ['accept-encoding', 'zstd'],
    ['if-none-match', '"x"'],
    ['if-none-match', '*'],
    ['if-modified-since', 'yesterday'],
    ['authorization', 'Bearer wrong'],
    ['authorization', `Bearer ${input.adminToken}x`],
    ['authorization', 'Basic Zm9vOmJhcg=='],
    ['authorization', 'Bearer'],
    ['content-type', 'application/json'],
    ['content-type', 'text/plain; charset=nonsense'],
    ['origin', 'http://evil.example'],
    ['x-forwarded-for', '1.2.3.4, ::1, garbage'],
    ['range', 'bytes=0-1'],
    ['accept', 'application/x-ndjson'],
    ['expect', '100-continue'],
  )
  return fc.array(h, { maxLength: 4 }).map((hs) => Object.fromEntries(hs))
}

function fillPath(path: string, input: FuzzInput): fc.Arbitrary<string> {
  const holes = path.match(/\{[^}]+\}/g) ?? []
  return fc.tuple(...holes.map(() => segment(input))).map((vals) => {
    let i = 0
    return path.replace(/\{[^}]+\}/g, () => vals[i++])
  })
}

export function requestArbitrary(input: FuzzInput): fc.Arbitrary<RawRequest & { route: string }> {
  return fc.constantFrom(...input.routes).chain((route) =>
    fc
      .record({
        path: fillPath(route.path, input),
        query: query(route, input),
        method: fc.oneof(fc.constant(route.method), fc.constantFrom(...METHODS)),
        headers: headers(input),
        mangle: fc.constantFrom(
          'none',
          'none',
          'none',
          'double-slash',
          'trailing-slash',
          'drop-last',
          'fragment',
        ),
        body: fc.oneof(
          fc.constant(undefined),
          fc.constantFrom('{', '{"did":1}', 'null', '[]'),
          strings,
        ),
      })
      .map((r) => ({
        route: `${route.method} ${route.path}`,
        method: r.method,
        target: mangle(r.path, r.mangle) + r.query,
        headers: r.headers,
        body: r.body,
      })),
  )
}

function mangle(path: string, how: string): string {
  if (how === 'double-slash') return path.replace('/', '//')
  if (how === 'trailing-slash') return `${path}/`
  if (how === 'drop-last') return path.slice(0, path.lastIndexOf('/')) || '/'
  if (how === 'fragment') return `${path}#frag`
  return path
}

export function sampleRequests(input: FuzzInput, n: number, seed: number) {
  return fc.sample(requestArbitrary(input), { numRuns: n, seed })
}
