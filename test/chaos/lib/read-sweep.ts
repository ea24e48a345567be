import { mapLimit } from './api-read.ts'

// Every read a client could make of a run's keys, made after a fault once /readyz says 200:
// a lookup of each record (prompts, conversations, agents), every page of the prompt list,
// every page of the change feed, and /v1/stats. The index may still be catching up (a 404
// or an older state is fine); a 5xx is not: once the database answers /readyz, no read
// may fail for an outage that is over (issue 28: a connection kept the error it met during
// the outage and failed a later read with it).

export interface Sweep {
  reads: number
  /** Each read that answered 5xx or not at all: path, status and the start of its body. */
  failures: string[]
}

const KIND_OF: Record<string, string> = {
  'xyz.quasigod.lab.letta.compiledPrompt': 'prompts',
  'xyz.quasigod.lab.letta.conversation': 'conversations',
  'xyz.quasigod.lab.letta.agent': 'agents',
}

export async function sweepReads(base: string, uris: Iterable<string>): Promise<Sweep> {
  const failures: string[] = []
  let reads = 0
  const get = async (path: string): Promise<string | null> => {
    reads++
    try {
      const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(30_000) })
      const body = await res.text()
      if (res.status < 500) return res.ok ? body : null
      failures.push(`GET ${path}: ${res.status} ${body.slice(0, 160)}`)
    } catch (err) {
      failures.push(`GET ${path}: no answer (${(err as Error).message})`)
    }
    return null
  }
  const lookups = [...uris].flatMap((uri) => {
    const [, , did, collection, rkey] = uri.split('/')
    const kind = KIND_OF[collection]
    return kind ? [`/v1/${kind}/${did}/${rkey}`] : []
  })
  await mapLimit(lookups, 4, get)
  await walk(get, (cursor) => `/v1/prompts?limit=100${cursor ? `&cursor=${cursor}` : ''}`)
  await walkFeed(get)
  await get('/v1/stats')
  return { reads, failures }
}

/** Every page of a list, following its cursor until there is none (or a page failed). */
async function walk(get: (p: string) => Promise<string | null>, page: (c: string) => string) {
  let cursor = ''
  do {
    const body = await get(page(encodeURIComponent(cursor)))
    if (body === null) return
    cursor = (JSON.parse(body) as { cursor?: string }).cursor ?? ''
  } while (cursor)
}

/** Every page of the change feed (NDJSON), by the seq of each page's last line. */
async function walkFeed(get: (p: string) => Promise<string | null>) {
  let since = 0
  for (;;) {
    const body = await get(`/v1/changes?since=${since}&limit=1000`)
    const lines = body?.split('\n').filter(Boolean) ?? []
    if (lines.length === 0) return
    since = (JSON.parse(lines[lines.length - 1]) as { seq: number }).seq
  }
}

/** A sweep's failures, at most `most` of them named, for a scenario's report. */
export function sweepProblems(what: string, s: Sweep, most = 5): string[] {
  if (s.failures.length === 0) return []
  const more = s.failures.length > most ? ` (and ${s.failures.length - most} more)` : ''
  return [
    `${what}: ${s.failures.length} of ${s.reads} reads failed with the database up${more}:\n      ${s.failures.slice(0, most).join('\n      ')}`,
  ]
}
