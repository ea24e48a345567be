import { createServer } from 'node:http'
import { describe, expect, it } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { createRandom } from '../../demo-network/random.ts'
import { normalizeJetstreamEvent } from '../../src/ingest/jetstream/event.ts'
import type { ChangeRow } from './lib/api-read.ts'
import { checkFeed, compareDigests } from './lib/compare.ts'
import { startCutProxy } from './lib/cut-proxy.ts'
import type { Digest } from './lib/digest.ts'
import { makeEvents } from './lib/events.ts'
import { FAR_FUTURE_US, mixHostile } from './lib/hostile.ts'
import { judge } from './scenarios/http-fuzz.ts'

// The chaos suite's own judges: if these were wrong, every scenario would pass or fail
// for the wrong reason.

const row = (
  seq: number,
  uri: string,
  cid: string | null,
  op: ChangeRow['op'] = 'upsert',
): ChangeRow => ({
  seq,
  op,
  collection: 'c',
  uri,
  cid,
  flags: [],
})

const digest = (records: Record<string, string>, feed: ChangeRow[] = []): Digest => ({
  records: new Map(Object.entries(records)),
  stats: '{}',
  cursor: 1,
  lastEventAt: null,
  feed,
  hash: 'h',
})

describe('chaos comparison', () => {
  const fine = [row(1, 'a', 'x'), row(2, 'a', 'y'), row(3, 'b', 'z'), row(4, 'a', null, 'delete')]

  it('accepts a feed that folds changes, with other seqs', () => {
    expect(checkFeed([row(10, 'b', 'z'), row(11, 'a', null, 'delete')], fine)).toEqual([])
  })

  it('refuses a repeated, reordered or invented change, and seqs going backwards', () => {
    expect(checkFeed([row(1, 'a', 'x'), row(2, 'a', 'x')], fine)).toHaveLength(1)
    expect(checkFeed([row(1, 'a', 'y'), row(2, 'a', 'x')], fine)).toHaveLength(1)
    expect(checkFeed([row(1, 'c', 'q')], fine)).toHaveLength(1)
    expect(checkFeed([row(2, 'b', 'z'), row(1, 'a', 'x')], fine)[0]).toMatch(/not increasing/)
  })

  it('names missing, extra and differing records', () => {
    const ref = digest({ a: '1', b: '2' })
    const got = digest({ a: '1x', c: '3' })
    const problems = compareDigests(got, ref, []).problems.join('\n')
    expect(problems).toMatch(/1 records missing, e.g. b/)
    expect(problems).toMatch(/1 records extra, e.g. c/)
    expect(problems).toMatch(/1 records differ, e.g. a: 1x != expected 1/)
    expect(compareDigests(ref, ref, []).ok).toBe(true)
  })
})

describe('hostile replay lines', () => {
  it('are refused by the product exactly where counted, with the poison line at a quarter', () => {
    const set = makeEvents(11, 400)
    const h = mixHostile(createRandom(5), set.events, set.lines, 300)
    expect(h.lines.at(-1)).toBe(set.lines.at(-1))
    expect(h.lines[h.poisonAt]).toContain(String(FAR_FUTURE_US))
    const collections = new Set(
      ['compiledPrompt', 'conversation', 'agent'].map((c) => `xyz.quasigod.lab.letta.${c}`),
    )
    const clean = new Set(set.lines)
    let refused = 0
    for (const line of h.lines) {
      if (clean.has(line) || line.trim() === '') continue
      if (!normalizeJetstreamEvent(line, { collections }).ok) refused++
    }
    expect(refused).toBe(h.counted)
    expect(h.counted).toBeGreaterThan(200)
    // Letta-shaped records with each defect, most as replays the rev guard refuses.
    const letta = Object.keys(h.byKind).filter((k) => k.startsWith('Letta '))
    for (const defect of [
      'system not a string',
      'tags not an array',
      '10,000',
      'without a metadata',
      'two metadata',
      'malformed metadata',
      'unclosed <file>',
      'duplicate file names',
      '200 KB on one line',
    ])
      expect(
        letta.some((k) => k.includes(defect)),
        defect,
      ).toBe(true)
    expect(letta.some((k) => k.endsWith('(replayed rev)'))).toBe(true)
  })
})

describe('cutting proxy', () => {
  it('forwards frames, then cuts once mid-frame: the client never sees the cut frame', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
    await new Promise<void>((r) => wss.once('listening', () => r()))
    wss.on('connection', (ws) => {
      for (let i = 0; i < 10; i++) ws.send(`frame ${i} ${'x'.repeat(300)}`)
    })
    const port = (wss.address() as { port: number }).port
    const proxy = await startCutProxy(`ws://127.0.0.1:${port}`, {
      nextGap: () => 4,
      midFrame: (n) => n === 1,
    })
    const got: string[] = []
    const ws = new WebSocket(`${proxy.url}/x?cursor=5`)
    ws.on('message', (d) => got.push(String(d).slice(0, 7)))
    const closed = await new Promise<number>((resolve) => {
      ws.on('close', (code) => resolve(code))
      ws.on('error', () => {})
    })
    expect(got).toEqual(['frame 0', 'frame 1', 'frame 2'])
    expect(closed).toBe(1006)
    expect(proxy.cuts).toEqual([
      { after: 3, midFrame: true, binary: false, written: 154, length: 308 },
    ])
    expect(proxy.requests).toEqual(['?cursor=5'])
    await proxy.close()
    await new Promise<void>((r) => wss.close(() => r()))
  })

  it('cuts a binary stream inside a binary frame, past text frames, and forwards plain GETs', async () => {
    const http = createServer((req, res) =>
      res.writeHead(200, { 'x-id': '7' }).end(`got ${req.url}`),
    )
    const wss = new WebSocketServer({ server: http })
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()))
    // Frames 0-2 binary, then text at the cut point: the mid-frame cut waits for frame 4.
    wss.on('connection', (ws) => {
      for (let i = 0; i < 8; i++)
        ws.send(i === 3 ? `text ${i}` : Buffer.alloc(200 + i, i), { binary: i !== 3 })
    })
    const port = (http.address() as { port: number }).port
    const proxy = await startCutProxy(`ws://127.0.0.1:${port}`, {
      nextGap: () => 4,
      midFrame: (n) => n === 1,
      midFrameBinary: true,
    })
    const got = await fetch(`${proxy.url.replace('ws:', 'http:')}/xrpc/dict?id=7`)
    expect([got.status, got.headers.get('x-id'), await got.text()]).toEqual([
      200,
      '7',
      'got /xrpc/dict?id=7',
    ])
    const frames: Array<[boolean, number]> = []
    const ws = new WebSocket(`${proxy.url}/x`)
    ws.on('message', (d: Buffer, isBinary) => frames.push([isBinary, d.length]))
    const closed = await new Promise<number>((resolve) => {
      ws.on('close', (code) => resolve(code))
      ws.on('error', () => {})
    })
    expect(frames).toEqual([
      [true, 200],
      [true, 201],
      [true, 202],
      [false, 6],
    ])
    expect(closed).toBe(1006)
    expect(proxy.cuts).toEqual([
      { after: 4, midFrame: true, binary: true, written: 102, length: 204 },
    ])
    expect([proxy.forwarded, proxy.binary, proxy.httpRequests]).toEqual([4, 3, ['/xrpc/dict?id=7']])
    await proxy.close()
    wss.close()
    await new Promise<void>((r) => http.close(() => r()))
  })
})

describe('the fuzzer judge', () => {
  const html = { 'content-type': 'text/html; charset=utf-8' }
  const json = { 'content-type': 'application/json; charset=utf-8' }
  const page = '<!doctype html>\n<html lang="en"><p>no such repo</p></html>'
  const err = '{"error":"NotFound","message":"no such repo"}'
  const res = (status: number, headers: Record<string, string>, body: string) => ({
    status,
    headers,
    body,
    ms: 1,
  })
  it('wants the API error shape on the API and HTML pages on the browse UI', () => {
    expect(judge('GET', res(404, json, err), '/v1/repos/did:x')).toBeNull()
    expect(judge('GET', res(404, html, page), '/repos/did:x')).toBeNull()
    expect(judge('GET', res(400, html, page), '/?limit')).toBeNull()
    expect(judge('GET', res(404, html, page), '/nope', { accept: 'text/html' })).toBeNull()
    expect(judge('GET', res(404, json, err), '/nope', { accept: '*/*' })).toBeNull()
    expect(judge('GET', res(404, html, page), '/v1/repos/did:x')).toMatch(/without a JSON/)
    expect(judge('GET', res(404, json, err), '/repos/did:x')).toMatch(/not HTML/)
    expect(judge('GET', res(404, html, page), '/nope')).toMatch(/without a JSON/)
    expect(judge('GET', res(500, html, page), '/repos/did:x')).toMatch(/^500/)
    // Not a page: a trailing slash, a malformed escape, another method (the router's JSON).
    expect(judge('GET', res(404, json, err), '/agents/a/b/')).toBeNull()
    const bad = '{"error":"InvalidRequest","message":"malformed URL"}'
    expect(judge('GET', res(400, json, bad), '/conversations/a/%?x')).toBeNull()
    expect(judge('CONNECT', res(405, json, bad), '/?limit=1')).toBeNull()
    expect(judge('GET', res(400, html, page), '/#frag?%')).toBeNull()
    expect(judge('GET', res(400, html, page), '/repos/?x=1')).toBeNull()
    expect(judge('GET', res(404, json, err), '/repos//')).toBeNull()
  })
})
