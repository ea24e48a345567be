import type { Database } from '../../db/client.ts'
import { readHandles } from '../../db/read/accounts.ts'
import { readAgentNames } from '../../db/read/records.ts'
import type { PromptView } from '../prompt-views.ts'
import { parseAtUri } from './components.ts'
import type { PageContext } from './page-route.ts'

// What the pages show instead of identifiers: verified handles of repos, agents' names.

/** Verified handles of visible accounts among `dids` (at most 200 asked at once). */
export async function getHandles(
  db: Database,
  dids: Iterable<string>,
): Promise<Map<string, string>> {
  const unique = [...new Set(dids)].slice(0, 200)
  if (unique.length === 0) return new Map()
  return readHandles(db, unique)
}

/** Visible agent records' trimmed `name`s, by at-uri (at most 200 asked at once). */
export async function getAgentNames(
  db: Database,
  agents: ReadonlyMap<string, { did: string; rkey: string }>,
): Promise<Map<string, string>> {
  const keys = new Map([...agents].slice(0, 200))
  const names = await readAgentNames(db, [...keys.values()])
  const out = new Map<string, string>()
  for (const [uri, k] of keys) {
    const name = names.get(`${k.did} ${k.rkey}`)?.trim()
    if (name) out.set(uri, name)
  }
  return out
}

export interface Names {
  handles: Map<string, string>
  agents: Map<string, string>
}

/** The handles and agent names of a page of prompts (agents parsed as agentLink parses them). */
export async function namesOf(
  items: ReadonlyArray<Pick<PromptView, 'did' | 'agent'>>,
  ctx: PageContext,
): Promise<Names> {
  const agents = new Map<string, { did: string; rkey: string }>()
  for (const { agent } of items) {
    const ref = parseAtUri(agent.uri)
    if (ref?.collection === ctx.nsids.agent) agents.set(agent.uri!, ref)
  }
  const [handles, agentNames] = await Promise.all([
    getHandles(
      ctx.db,
      items.map((p) => p.did),
    ),
    getAgentNames(ctx.db, agents),
  ])
  return { handles, agents: agentNames }
}
