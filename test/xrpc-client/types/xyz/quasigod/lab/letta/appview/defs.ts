/**
 * GENERATED CODE - DO NOT MODIFY
 */
import { type ValidationResult, BlobRef } from '@atproto/lexicon'
import { CID } from 'multiformats/cid'
import { validate as _validate } from '../../../../../../lexicons.js'
import {
  type $Typed,
  is$typed as _is$typed,
  type OmitKey,
} from '../../../../../../util.js'

const is$typed = _is$typed,
  validate = _validate
const id = 'xyz.quasigod.lab.letta.appview.defs'

/** One compiledPrompt with its flags and one reason per flag. */
export interface PromptView {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#promptView'
  uri: string
  /** CID of the record version shown. */
  cid: string
  did: string
  rkey: string
  /** Repo rev of the commit that wrote this version. */
  rev: string
  /** The record as published. */
  record: { [_ in string]: unknown }
  flags: (
    | 'orphaned'
    | 'mismatched'
    | 'staleTemplate'
    | 'staleMemory'
    | 'coreMemoryDetached'
    | 'invalid'
    | (string & {})
  )[]
  conversation: ConversationLink
  agent: AgentLink
  /** Versions of this record seen after the first. */
  recompiles: number
  /** What the current version changed since the revision before it (as on its revision): template, memory, metadata or other; [] for a first version; null when indexed before this was kept. */
  changed: (
    'template' | 'memory' | 'metadata' | 'other' | (string & {}) | null
  )[]
  indexedAt: string
  /** Why the record does not validate against its lexicon (flag invalid); null when it does. */
  validationError: string | null
  provenance: Provenance
  reasons: Reasons
}

const hashPromptView = 'promptView'

export function isPromptView<V>(v: V) {
  return is$typed(v, id, hashPromptView)
}

export function validatePromptView<V>(v: V) {
  return validate<PromptView & V>(v, id, hashPromptView)
}

/** A prompt in a list: the promptView without reasons, with the size of its content. */
export interface PromptListItem {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#promptListItem'
  uri: string
  cid: string
  did: string
  rkey: string
  rev: string
  /** The record without content and coreMemory. */
  record: { [_ in string]: unknown }
  flags: (
    | 'orphaned'
    | 'mismatched'
    | 'staleTemplate'
    | 'staleMemory'
    | 'coreMemoryDetached'
    | 'invalid'
    | (string & {})
  )[]
  conversation: ConversationLink
  agent: AgentLink
  recompiles: number
  /** What the current version changed since the revision before it (as on its revision): template, memory, metadata or other; [] for a first version; null when indexed before this was kept. */
  changed: (
    'template' | 'memory' | 'metadata' | 'other' | (string & {}) | null
  )[]
  indexedAt: string
  validationError: string | null
  provenance: Provenance
  /** UTF-8 bytes of the record's content. */
  contentBytes: number | null
}

const hashPromptListItem = 'promptListItem'

export function isPromptListItem<V>(v: V) {
  return is$typed(v, id, hashPromptListItem)
}

export function validatePromptListItem<V>(v: V) {
  return validate<PromptListItem & V>(v, id, hashPromptListItem)
}

/** A promptListItem with a snippet of content around the first match. */
export interface SearchItem {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#searchItem'
  uri: string
  cid: string
  did: string
  rkey: string
  rev: string
  /** The record without content and coreMemory. */
  record: { [_ in string]: unknown }
  flags: (
    | 'orphaned'
    | 'mismatched'
    | 'staleTemplate'
    | 'staleMemory'
    | 'coreMemoryDetached'
    | 'invalid'
    | (string & {})
  )[]
  conversation: ConversationLink
  agent: AgentLink
  recompiles: number
  /** What the current version changed since the revision before it (as on its revision): template, memory, metadata or other; [] for a first version; null when indexed before this was kept. */
  changed: (
    'template' | 'memory' | 'metadata' | 'other' | (string & {}) | null
  )[]
  indexedAt: string
  validationError: string | null
  provenance: Provenance
  contentBytes: number | null
  snippet: Snippet
}

const hashSearchItem = 'searchItem'

export function isSearchItem<V>(v: V) {
  return is$typed(v, id, hashSearchItem)
}

export function validateSearchItem<V>(v: V) {
  return validate<SearchItem & V>(v, id, hashSearchItem)
}

export interface Snippet {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#snippet'
  /** Plain text around the first match (escape it to show it as HTML). */
  text: string
  matches: SnippetMatch[]
}

const hashSnippet = 'snippet'

export function isSnippet<V>(v: V) {
  return is$typed(v, id, hashSnippet)
}

export function validateSnippet<V>(v: V) {
  return validate<Snippet & V>(v, id, hashSnippet)
}

/** Where a word of q occurs in the snippet's text: UTF-16 offsets [start, end). */
export interface SnippetMatch {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#snippetMatch'
  start: number
  end: number
}

const hashSnippetMatch = 'snippetMatch'

export function isSnippetMatch<V>(v: V) {
  return is$typed(v, id, hashSnippetMatch)
}

export function validateSnippetMatch<V>(v: V) {
  return validate<SnippetMatch & V>(v, id, hashSnippetMatch)
}

/** The conversation in the prompt's slot; exists means present and visible. */
export interface ConversationLink {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#conversationLink'
  uri: string
  exists: boolean
}

const hashConversationLink = 'conversationLink'

export function isConversationLink<V>(v: V) {
  return is$typed(v, id, hashConversationLink)
}

export function validateConversationLink<V>(v: V) {
  return validate<ConversationLink & V>(v, id, hashConversationLink)
}

/** The agent the record names (null when it names none); exists means indexed and visible. */
export interface AgentLink {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#agentLink'
  /** As the record wrote it: not checked to be an at-uri. */
  uri: string | null
  exists: boolean
}

const hashAgentLink = 'agentLink'

export function isAgentLink<V>(v: V) {
  return is$typed(v, id, hashAgentLink)
}

export function validateAgentLink<V>(v: V) {
  return validate<AgentLink & V>(v, id, hashAgentLink)
}

/** How the record was obtained: source, whether its commit was verified, commit CID and rev. */
export interface Provenance {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#provenance'
  source:
    'firehose' | 'jetstream' | 'backfill' | 'replay' | (string & {}) | null
  verified: boolean
  commit: string | null
  rev: string
}

const hashProvenance = 'provenance'

export function isProvenance<V>(v: V) {
  return is$typed(v, id, hashProvenance)
}

export function validateProvenance<V>(v: V) {
  return validate<Provenance & V>(v, id, hashProvenance)
}

/** One plain-language sentence per flag set, naming its evidence; the keys are exactly the prompt's flags. */
export interface Reasons {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#reasons'
  orphaned?: string
  mismatched?: string
  staleTemplate?: string
  staleMemory?: string
  coreMemoryDetached?: string
  invalid?: string
}

const hashReasons = 'reasons'

export function isReasons<V>(v: V) {
  return is$typed(v, id, hashReasons)
}

export function validateReasons<V>(v: V) {
  return validate<Reasons & V>(v, id, hashReasons)
}

/** Visible prompts per flag, and ok for those with none. */
export interface FlagCounts {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#flagCounts'
  orphaned: number
  mismatched: number
  staleTemplate: number
  staleMemory: number
  coreMemoryDetached: number
  invalid: number
  ok: number
}

const hashFlagCounts = 'flagCounts'

export function isFlagCounts<V>(v: V) {
  return is$typed(v, id, hashFlagCounts)
}

export function validateFlagCounts<V>(v: V) {
  return validate<FlagCounts & V>(v, id, hashFlagCounts)
}

/** Visible prompts naming the agent: total, per flag, and ok. */
export interface AgentPromptCounts {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#agentPromptCounts'
  total: number
  orphaned: number
  mismatched: number
  staleTemplate: number
  staleMemory: number
  coreMemoryDetached: number
  invalid: number
  ok: number
}

const hashAgentPromptCounts = 'agentPromptCounts'

export function isAgentPromptCounts<V>(v: V) {
  return is$typed(v, id, hashAgentPromptCounts)
}

export function validateAgentPromptCounts<V>(v: V) {
  return validate<AgentPromptCounts & V>(v, id, hashAgentPromptCounts)
}

/** The visible prompt in a conversation's slot. */
export interface ConversationPrompt {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#conversationPrompt'
  uri: string
  flags: (
    | 'orphaned'
    | 'mismatched'
    | 'staleTemplate'
    | 'staleMemory'
    | 'coreMemoryDetached'
    | 'invalid'
    | (string & {})
  )[]
}

const hashConversationPrompt = 'conversationPrompt'

export function isConversationPrompt<V>(v: V) {
  return is$typed(v, id, hashConversationPrompt)
}

export function validateConversationPrompt<V>(v: V) {
  return validate<ConversationPrompt & V>(v, id, hashConversationPrompt)
}

/** One revision (record version) of a prompt. */
export interface RevisionView {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#revisionView'
  rev: string
  cid: string
  /** As the record wrote it. */
  compiledAt: string | null
  rawSystemHash: string | null
  memfsRevision: string | null
  /** Lowercase hex SHA-256 of content. */
  contentHash: string | null
  seenAt: string
  /** What this revision changed since the one before it: template, memory, metadata (only the compile's metadata block) or other; template and memory may come together; [] for the oldest revision held; null when indexed before this was kept. */
  changed: (
    'template' | 'memory' | 'metadata' | 'other' | (string & {}) | null
  )[]
  /** The memory files whose blocks changed (memfs-v2 file names, memfs-v1 paths such as persona); [] when the memory did not change or cannot be read file by file; null when changed is. */
  memoryFiles: (string | null)[]
}

const hashRevisionView = 'revisionView'

export function isRevisionView<V>(v: V) {
  return is$typed(v, id, hashRevisionView)
}

export function validateRevisionView<V>(v: V) {
  return validate<RevisionView & V>(v, id, hashRevisionView)
}

/** A run of lines of a line diff; an unchanged run longer than a few lines is collapsed to skipped with no lines. */
export interface Hunk {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#hunk'
  op: 'equal' | 'insert' | 'delete' | (string & {})
  lines: string[]
  skipped?: number
}

const hashHunk = 'hunk'

export function isHunk<V>(v: V) {
  return is$typed(v, id, hashHunk)
}

export function validateHunk<V>(v: V) {
  return validate<Hunk & V>(v, id, hashHunk)
}

/** A diff cut into the three parts of a prompt Letta compiled, each change in exactly one: the template (content with the core memory put back as {CORE_MEMORY}), the memory (the memfs projection) and the metadata block. */
export interface DiffParts {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#diffParts'
  template: Hunk[]
  memory: Hunk[]
  metadata: Hunk[]
}

const hashDiffParts = 'diffParts'

export function isDiffParts<V>(v: V) {
  return is$typed(v, id, hashDiffParts)
}

export function validateDiffParts<V>(v: V) {
  return validate<DiffParts & V>(v, id, hashDiffParts)
}

/** One change of the change feed: a line of GET /v1/changes (with include=record, of GET /v1/changes?include=record). */
export interface ChangeView {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#changeView'
  seq: number
  op: 'upsert' | 'delete' | (string & {})
  collection: string
  uri: string
  /** null on delete. */
  cid: string | null
  /** Flag names of a prompt, [] for other collections, null on delete. */
  flags: (string | null)[]
  /** On a prompt upsert: what this version changed since the revision before it (template and memory may come together, metadata only alone; [] for a prompt's first version), null when logged before this was kept; null on deletes and other collections. */
  changed?: (
    'template' | 'memory' | 'metadata' | 'other' | (string & {}) | null
  )[]
  at: string
  /** With include=record, on an upsert: the record with this cid (a prompt's older version rebuilt from its revision history), or null when that version is no longer kept (then superseded is true). */
  record?: { [_ in string]: unknown } | null
  /** With include=record: true when the record with this cid is no longer kept (record is null). */
  superseded?: boolean
}

const hashChangeView = 'changeView'

export function isChangeView<V>(v: V) {
  return is$typed(v, id, hashChangeView)
}

export function validateChangeView<V>(v: V) {
  return validate<ChangeView & V>(v, id, hashChangeView)
}

export interface RepoAccount {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#repoAccount'
  active: boolean
  /** The upstream account status when not active (takendown, deactivated, ...). */
  status: string | null
  /** Hidden by this index: inactive upstream, or on the operator's takedown list. */
  hidden: boolean
}

const hashRepoAccount = 'repoAccount'

export function isRepoAccount<V>(v: V) {
  return is$typed(v, id, hashRepoAccount)
}

export function validateRepoAccount<V>(v: V) {
  return validate<RepoAccount & V>(v, id, hashRepoAccount)
}

/** Sync 1.1 chain state; state is null before the verified firehose saw the repo. */
export interface RepoSync {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#repoSync'
  state: 'synchronized' | 'desynchronized' | 'resyncing' | (string & {}) | null
  rev: string | null
  reason: string | null
  since: string | null
}

const hashRepoSync = 'repoSync'

export function isRepoSync<V>(v: V) {
  return is$typed(v, id, hashRepoSync)
}

export function validateRepoSync<V>(v: V) {
  return validate<RepoSync & V>(v, id, hashRepoSync)
}

export interface RepoRecordCounts {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#repoRecordCounts'
  prompts: number
  conversations: number
  agents: number
}

const hashRepoRecordCounts = 'repoRecordCounts'

export function isRepoRecordCounts<V>(v: V) {
  return is$typed(v, id, hashRepoRecordCounts)
}

export function validateRepoRecordCounts<V>(v: V) {
  return validate<RepoRecordCounts & V>(v, id, hashRepoRecordCounts)
}

export interface IngestStatus {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#ingestStatus'
  source: string | null
  /** The stored position of the source (a seq or a time_us). */
  cursor: number | null
  /** Seconds since the newest event's time, rounded to whole seconds (the atproto data model has no fractions; GET /v1/stats gives them). */
  lagSeconds: number | null
  lastEventAt: string | null
  gap: IngestGap | null
}

const hashIngestStatus = 'ingestStatus'

export function isIngestStatus<V>(v: V) {
  return is$typed(v, id, hashIngestStatus)
}

export function validateIngestStatus<V>(v: V) {
  return validate<IngestStatus & V>(v, id, hashIngestStatus)
}

/** What the source reported it could not resume (a cursor older than Jetstream's window): backfill to close it. */
export interface IngestGap {
  $type?: 'xyz.quasigod.lab.letta.appview.defs#ingestGap'
  reason: string
  at: string
  cursor: number | null
  message: string
  action: string
}

const hashIngestGap = 'ingestGap'

export function isIngestGap<V>(v: V) {
  return is$typed(v, id, hashIngestGap)
}

export function validateIngestGap<V>(v: V) {
  return validate<IngestGap & V>(v, id, hashIngestGap)
}
