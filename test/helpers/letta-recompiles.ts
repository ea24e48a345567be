import {
  type CompileInput,
  compileSystemPrompt,
  type MemoryFile,
} from '../../demo-network/letta-compile.ts'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import { apply, type World } from './events.ts'

// Prompts compiled by Letta's algorithm (SPEC 14): their fields, for the tests that store
// them, and one prompt recompiled once of each kind, for the tests that read the anatomy
// back through each door: the export, the feed, the subscription, the revision reads and
// the UI.

export const LETTA_SYSTEM =
  'You are Esme.\n<base_instructions>\nBe brief.\n</base_instructions>\n\n{CORE_MEMORY}'
const LETTA_FILES: MemoryFile[] = [
  { path: 'MEMORY.md', raw: '# Memory\n- persona.md\n- human.md' },
  { path: 'persona.md', raw: '---\ndescription: self\n---\nI am Esme.' },
  { path: 'human.md', raw: 'The user is Sam.' },
]

/** LETTA_FILES with the file at `path` rewritten to `raw`. */
export const editedFiles = (path: string, raw: string): MemoryFile[] =>
  LETTA_FILES.map((f) => (f.path === path ? { path, raw } : f))

/** A compiledPrompt's fields in `did` as Letta compiles them at the world's clock, `over` changed. */
export function lettaFields(
  w: World,
  did: string,
  over: Partial<CompileInput> = {},
): Record<string, unknown> {
  return {
    ...compileSystemPrompt({
      agentId: 'agent-esme',
      system: LETTA_SYSTEM,
      conversationId: 'conv-1',
      files: LETTA_FILES,
      memfsRevision: 'a'.repeat(40),
      compiledAt: new Date(w.us / 1000),
      previousMessageCount: 4,
      ...over,
    }),
    agent: w.agentUri(did, 'agentrkey'),
  }
}

const HUMAN_EDITED = editedFiles('human.md', 'The user is Sam. Sam likes tea.')

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
  const steps: Array<Partial<CompileInput>> = [
    {},
    { previousMessageCount: 9 },
    { previousMessageCount: 9, files: HUMAN_EDITED, memfsRevision: 'b'.repeat(40) },
    {
      previousMessageCount: 9,
      files: HUMAN_EDITED,
      memfsRevision: 'b'.repeat(40),
      system: `${LETTA_SYSTEM}\nNever lie.`,
    },
  ]
  await apply(deps, [w.conversation({ did, rkey })])
  for (const [i, over] of steps.entries()) {
    w.tick(60_000_000)
    await apply(deps, [
      w.prompt({ did, rkey, op: i === 0 ? 'create' : 'update', fields: lettaFields(w, did, over) }),
    ])
  }
}
