import {
  type CompileInput,
  compileSystemPrompt,
  type MemoryFile,
} from '../../demo-network/letta-compile.ts'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import { apply, type World } from '../helpers/events.ts'

// A prompt recompiled by Letta's algorithm once of each kind (SPEC 14), for the tests that
// read the anatomy back through each door: the export, the feed, the subscription, the
// revision reads and the UI.

const SYSTEM =
  'You are Esme.\n<base_instructions>\nBe brief.\n</base_instructions>\n\n{CORE_MEMORY}'
const FILES: MemoryFile[] = [
  { path: 'MEMORY.md', raw: '# Memory\n- persona.md\n- human.md' },
  { path: 'persona.md', raw: '---\ndescription: self\n---\nI am Esme.' },
  { path: 'human.md', raw: 'The user is Sam.' },
]
const HUMAN_EDITED = FILES.map((f) =>
  f.path === 'human.md' ? { ...f, raw: 'The user is Sam. Sam likes tea.' } : f,
)

/** The anatomy of each revision, oldest first, as lettaRecompiles writes them. */
export const LETTA_ANATOMY = [
  { changed: [], memoryFiles: [] },
  { changed: ['metadata'], memoryFiles: [] },
  { changed: ['memory'], memoryFiles: ['human.md'] },
  { changed: ['template'], memoryFiles: [] },
]

/**
 * Ingests a conversation and a prompt in `did`/`rkey` compiled by Letta's algorithm, then
 * three recompiles: metadata only, human.md edited, the template edited (one apply each).
 */
export async function lettaRecompiles(
  deps: IndexerDeps,
  w: World,
  did: string,
  rkey: string,
): Promise<void> {
  const fields = (over: Partial<CompileInput>) => ({
    ...compileSystemPrompt({
      agentId: 'agent-esme',
      system: SYSTEM,
      conversationId: 'conv-1',
      files: FILES,
      memfsRevision: 'a'.repeat(40),
      compiledAt: new Date(w.us / 1000),
      previousMessageCount: 4,
      ...over,
    }),
    agent: w.agentUri(did, 'agentrkey'),
  })
  const steps: Array<Partial<CompileInput>> = [
    {},
    { previousMessageCount: 9 },
    { previousMessageCount: 9, files: HUMAN_EDITED, memfsRevision: 'b'.repeat(40) },
    {
      previousMessageCount: 9,
      files: HUMAN_EDITED,
      memfsRevision: 'b'.repeat(40),
      system: `${SYSTEM}\nNever lie.`,
    },
  ]
  await apply(deps, [w.conversation({ did, rkey })])
  for (const [i, over] of steps.entries()) {
    w.tick(60_000_000)
    await apply(deps, [
      w.prompt({ did, rkey, op: i === 0 ? 'create' : 'update', fields: fields(over) }),
    ])
  }
}
