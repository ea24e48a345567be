import type { FlagEvidenceRow } from '../db/flag-evidence.ts'
import type { FlagName } from '../model/flags.ts'
import type { Nsids } from '../model/nsids.ts'
import type { PromptView } from './prompt-views.ts'

// One sentence per flag a prompt carries, naming the evidence (SPEC section 6, `reasons`);
// a flag whose evidence is gone still gets a sentence that says so, never a missing key.

export type Reasons = Partial<Record<FlagName, string>>

/** Flags whose sentence reads the record itself (the others read the row and its evidence). */
export const FLAGS_WITH_RECORD: readonly FlagName[] = ['mismatched', 'coreMemoryDetached']

const EXCERPT = 40
// The flag was computed at the prompt's last write and the probes run now: a rule they do
// not share, or a row changed by a later batch not yet re-flagged, leaves it without a witness.
const CHANGED_MEANWHILE =
  'the evidence that set this flag changed while this answer was read: ask again'
const q = (s: string): string => JSON.stringify(s)
const isoOf = (us: string | number | null): string =>
  us === null ? 'an unknown time' : new Date(Number(us) / 1000).toISOString()

export function flagReasons(
  view: PromptView,
  evidence: FlagEvidenceRow | null,
  nsids: Nsids,
): Reasons {
  const out: Reasons = {}
  const record = (view.record ?? {}) as Record<string, unknown>
  for (const flag of view.flags as FlagName[])
    out[flag] = sentence(flag, view, record, evidence, nsids)
  return out
}

function sentence(
  flag: FlagName,
  view: PromptView,
  record: Record<string, unknown>,
  ev: FlagEvidenceRow | null,
  nsids: Nsids,
): string {
  switch (flag) {
    case 'orphaned':
      return ev?.conversation_deleted
        ? `the conversation record at ${view.conversation.uri} was deleted`
        : `no conversation record at ${view.conversation.uri}`
    case 'mismatched':
      return mismatchReason(record.conversation, view, nsids)
    case 'invalid':
      return `the record is not valid: ${view.validationError ?? 'no validation message was kept'}`
    case 'coreMemoryDetached':
      return detachedReason(record.content, record.coreMemory)
    case 'staleTemplate':
      return staleTemplateReason(view, ev)
    case 'staleMemory':
      return staleMemoryReason(view, ev)
  }
}

function mismatchReason(field: unknown, { did, rkey, conversation }: PromptView, nsids: Nsids) {
  const slot = conversation.uri
  if (typeof field !== 'string')
    return `the record has no conversation at-uri; this prompt's slot is ${slot}`
  const m = /^at:\/\/([^/]*)\/([^/]*)\/(.*)$/.exec(field)
  const wrong = m
    ? [
        m[1] !== did ? `its authority is not ${did}` : null,
        m[2] !== nsids.conversation ? `its collection is not ${nsids.conversation}` : null,
        m[3] !== rkey ? `its record key is not ${rkey}` : null,
      ].filter((x) => x !== null)
    : ['it is not an at-uri of a record']
  const why = wrong.length > 0 ? wrong.join(', ') : 'it is not spelled exactly as the slot'
  return `the record names conversation ${q(field)}, not this prompt's slot ${slot}: ${why}`
}

/** Where coreMemory stops being found in content: its longest leading part that content holds. */
export function detachedReason(content: unknown, coreMemory: unknown): string {
  if (typeof content !== 'string' || typeof coreMemory !== 'string')
    return 'coreMemory is not part of content'
  // A prefix found in content means every shorter one is too, so the length bisects.
  let lo = 0
  let hi = coreMemory.length
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (content.includes(coreMemory.slice(0, mid))) lo = mid
    else hi = mid - 1
  }
  const rest = q(coreMemory.slice(lo, lo + EXCERPT))
  if (lo === 0)
    return `coreMemory (${coreMemory.length} characters) is not part of content: content does not contain even its first character, ${rest}`
  const at = content.indexOf(coreMemory.slice(0, lo))
  const contentNext = q(content.slice(at + lo, at + lo + EXCERPT))
  return `coreMemory (${coreMemory.length} characters) is not part of content: its first ${lo} characters match content at offset ${at}, then coreMemory reads ${rest} where content reads ${contentNext}`
}

function staleTemplateReason(view: PromptView, ev: FlagEvidenceRow | null): string {
  const own = ev?.raw_system_hash ?? null
  if (ev?.agent_template_hash) {
    const agent = view.agent.uri ?? 'the agent record'
    if (ev.agent_hidden)
      return `the agent record ${agent} (its repo is hidden here) has a current system template whose hash differs from ${own}, the one this prompt was compiled from`
    return `the agent record ${agent} has a current system template that hashes to ${ev.agent_template_hash}; this prompt was compiled from ${own}`
  }
  if (ev?.newer_template_rkey)
    return `a newer compile of the same agent, ${promptUriOf(view, ev.newer_template_rkey)} (compiled at ${isoOf(ev.newer_template_us)}), was compiled from template ${ev.newer_template_hash}; this prompt was compiled from ${own}`
  return CHANGED_MEANWHILE
}

function staleMemoryReason(view: PromptView, ev: FlagEvidenceRow | null): string {
  if (ev?.newer_memory_rkey)
    return `a newer compile of the same agent, ${promptUriOf(view, ev.newer_memory_rkey)} (compiled at ${isoOf(ev.newer_memory_us)}), shows memfsRevision ${q(ev.newer_memory_revision ?? '')}; this prompt shows ${q(ev.memfs_revision ?? '')}`
  return CHANGED_MEANWHILE
}

/** The newer compile is of the same repo (SPEC section 3), so only its rkey differs. */
function promptUriOf(view: PromptView, rkey: string): string {
  return view.uri.slice(0, view.uri.lastIndexOf('/') + 1) + rkey
}
