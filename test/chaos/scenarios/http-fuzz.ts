import { mapLimit } from '../lib/api-read.ts'
import { COMMON_ENV, replayArgs } from '../lib/baseline.ts'
import { startCli, tail } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import { type Driver, freshDb } from '../lib/db.ts'
import { readDigest } from '../lib/digest.ts'
import { type Route, sampleRequests } from '../lib/fuzz-gen.ts'
import { waitCaughtUp } from '../lib/progress.ts'
import { type RawResponse, rawRequest } from '../lib/raw-http.ts'
import type { Scenario } from '../lib/scenario.ts'

// Hostile HTTP requests over every route (fast-check, seeded) while the product ingests:
// no 5xx, no dropped connection, no crash, every 4xx of the API in the documented error
// shape (SPEC 6: {"error","message"}, the name matching the status), every 4xx of the
// browse UI's pages an HTML page (SPEC 6, Browse UI: pages are for people), and the end
// state the baseline's (a read-only API changes nothing; admin calls only carry wrong
// tokens or name repos the index does not hold).

const ERROR_NAMES: Record<number, string> = {
  400: 'InvalidRequest',
  401: 'AuthRequired',
  404: 'NotFound',
  429: 'RateLimitExceeded',
}
const ADMIN_TOKEN = 'chaos-admin-token-0123456789'
/** Routes the OpenAPI document hides or that exist outside it. */
const EXTRA_ROUTES: Route[] = [
  { method: 'GET', path: '/openapi.json', query: [] },
  { method: 'GET', path: '/docs', query: [] },
  { method: 'GET', path: '/', query: [] },
  { method: 'GET', path: '/{x}', query: [] },
  {
    method: 'GET',
    path: '/prompts',
    query: ['q', 'flag', 'did', 'agent', 'limit', 'cursor', 'prev'],
  },
  { method: 'GET', path: '/prompts/{did}/{rkey}', query: ['from', 'to', 'revcursor'] },
  { method: 'GET', path: '/conversations/{did}/{rkey}', query: [] },
  { method: 'GET', path: '/agents/{did}/{rkey}', query: [] },
  { method: 'GET', path: '/repos/{did}', query: [] },
  { method: 'POST', path: '/admin/repos/{did}/resync', query: [] },
  { method: 'POST', path: '/admin/repos/{did}/hide', query: [] },
  { method: 'POST', path: '/admin/repos/{did}/unhide', query: [] },
  // The XRPC catch-all: paths that are no NSID, and NSIDs this service does not implement.
  { method: 'GET', path: '/xrpc/{nsid}', query: ['did', 'rkey', 'uri'] },
  { method: 'GET', path: '/xrpc/com.example.notImplemented', query: ['limit'] },
]
/** The DID the product serves its DID document for, so /.well-known/did.json is fuzzed. */
const SERVICE_DID = 'did:web:appview.chaos.test'

async function routesOf(url: string): Promise<Route[]> {
  const doc = (await (await fetch(`${url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>>
  }
  const routes: Route[] = []
  for (const [path, ops] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(ops))
      routes.push({
        method: method.toUpperCase(),
        path,
        query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
      })
  const seen = new Set(routes.map((r) => `${r.method} ${r.path}`))
  return [...routes, ...EXTRA_ROUTES.filter((r) => !seen.has(`${r.method} ${r.path}`))]
}

/** The browse UI's pages (GET): their errors are HTML pages whatever the client accepts. */
// (find-my-way matches an empty parameter, so `/repos/` is the repo page with no DID; a
// parameter past the app's maxParamLength is the router's answer.)
const UI_PAGE = /^\/(prompts(\/[^/]*\/[^/]*)?|(conversations|agents)\/[^/]*\/[^/]*|repos\/[^/]*)?$/
const MAX_PARAM = 4_096
const API_PATH = /^\/(v1|admin|metrics|healthz|readyz|openapi\.json|xrpc)(\/|$)/

function decodes(path: string): boolean {
  try {
    decodeURIComponent(path)
    return true
  } catch {
    return false
  }
}

/**
 * Whether a 4xx to this request is an HTML page: a GET of a UI page always (a path the
 * router can decode and match exactly: a trailing slash or a malformed escape is no page),
 * elsewhere off the API when the client accepts text/html (a browser on an unknown path);
 * otherwise JSON.
 */
export function wantsHtmlError(
  method: string,
  target: string,
  headers: Record<string, string>,
): boolean {
  const path = target.split(/[?#]/)[0] ?? ''
  if (API_PATH.test(path)) return false
  const short = path.split('/').every((seg) => seg.length <= MAX_PARAM)
  if (method === 'GET' && UI_PAGE.test(path) && decodes(path) && short) return true
  const accept = Object.entries(headers).find(([k]) => k.toLowerCase() === 'accept')?.[1] ?? ''
  return accept.includes('text/html')
}

function htmlProblem(res: RawResponse): string | null {
  const type = res.headers['content-type'] ?? ''
  if (!type.startsWith('text/html'))
    return `${res.status} of a UI page with content-type ${JSON.stringify(type)}, not HTML`
  if (!/^<!doctype html>/i.test(res.body))
    return `${res.status} of a UI page not an HTML document: ${JSON.stringify(res.body.slice(0, 120))}`
  return null
}

/** What is wrong with one answer, or null. */
export function judge(
  method: string,
  res: RawResponse,
  target = '/v1',
  headers: Record<string, string> = {},
): string | null {
  if (res.status === null) return `no answer (${res.error ?? 'connection closed'})`
  // XRPC's answer to a method this service does not implement is a 501 by design.
  const notImplemented = res.status === 501 && /^\/xrpc\//.test(target)
  if (res.status >= 500 && !notImplemented) return `${res.status} ${res.body.slice(0, 200)}`
  if (res.status < 400 || method === 'HEAD') return null
  if (notImplemented) return errorShapeProblem(res, 'MethodNotImplemented')
  if (wantsHtmlError(method, target, headers)) return htmlProblem(res)
  return errorShapeProblem(res, ERROR_NAMES[res.status])
}

/** What is wrong with a JSON error answer: not {"error","message"}, or named otherwise. */
function errorShapeProblem(res: RawResponse, want: string | undefined): string | null {
  let body: { error?: unknown; message?: unknown }
  try {
    body = JSON.parse(res.body)
  } catch {
    return `${res.status} without a JSON error body: ${JSON.stringify(res.body.slice(0, 120))}`
  }
  if (typeof body?.error !== 'string' || typeof body?.message !== 'string')
    return `${res.status} body not {"error","message"}: ${res.body.slice(0, 120)}`
  if (want && body.error !== want) return `${res.status} named ${body.error}, SPEC says ${want}`
  return null
}

export function httpFuzzScenario(driver: Driver): Scenario {
  return {
    name: `http-fuzz-${driver}`,
    short: driver === 'pglite',
    injects: `hostile HTTP requests over every route during ingestion on ${driver} (fast-check, seeded)`,
    async run(ctx, shared) {
      const base = await shared.baseline(driver)
      const db = await freshDb(ctx, driver)
      const p = startCli(replayArgs(base.file), {
        ...COMMON_ENV,
        ...db.env,
        ADMIN_TOKEN,
        SERVICE_DID,
        BATCH_SIZE: '50',
      })
      ctx.defer('stop the product', () => void p.kill9())
      const url = await p.waitListening()
      const { hostname, port } = new URL(url)
      const routes = await routesOf(url)
      const keys = [...base.fine.records.keys()].map((u) => u.split('/'))
      const input = {
        routes,
        dids: [...new Set(keys.map((k) => k[2]))].slice(0, 30),
        rkeys: [...new Set(keys.map((k) => k[4]))].slice(0, 30),
        adminToken: ADMIN_TOKEN,
      }
      const n = ctx.short ? 400 : 4_000
      const reqs = sampleRequests(input, n, ctx.rand.int(1, 2 ** 30))
      const statuses: Record<string, number> = {}
      const bad: string[] = []
      await mapLimit(reqs, 4, async (r) => {
        const res = await rawRequest(hostname, Number(port), r)
        statuses[String(res.status)] = (statuses[String(res.status)] ?? 0) + 1
        const problem = judge(r.method, res, r.target, r.headers)
        if (problem)
          bad.push(
            `${r.method} ${r.target.slice(0, 160)} [${Object.keys(r.headers).join(',')}] -> ${problem}`,
          )
      })
      const failures: string[] = []
      const st = p.exit()
      if (st) failures.push(`the process exited during the fuzz:\n${tail(p.output())}`)
      const byProblem = new Map<string, string[]>()
      for (const b of bad) {
        const k = b.replace(/^.*-> /, '').slice(0, 60)
        byProblem.set(k, [...(byProblem.get(k) ?? []), b])
      }
      for (const [, list] of byProblem) failures.push(`${list.length} x ${list[0]}`)
      ctx.note(
        `${reqs.length} requests over ${routes.length} routes (${routes.map((r) => `${r.method} ${r.path}`).join(', ')})`,
      )
      ctx.note(
        `statuses: ${Object.entries(statuses)
          .sort()
          .map(([s, c]) => `${s}: ${c}`)
          .join(', ')}; ${bad.length} bad answers`,
      )
      if (!st) {
        await waitCaughtUp(p, base.set.lastTimeUs, 300_000)
        const got = await readDigest(url, base.fine.records.keys())
        const cmp = compareDigests(got, base.fine, base.fine.feed)
        ctx.note(`end state after the fuzz: ${cmp.summary}`)
        failures.push(...cmp.problems)
        const code = await p.stop()
        if (code !== 0) failures.push(`SIGTERM exit code ${code}`)
      }
      return {
        failures,
        figures: `${reqs.length} requests, ${bad.length} bad, ${statuses['500'] ?? 0} x 500`,
      }
    },
  }
}
