import type { getStats } from '../../db/read/stats.ts'
import type { PromptListItem, PromptView } from '../prompt-views.ts'
import type { AgentSummary, ConversationView } from '../reads.ts'
import type { RevisionView } from '../revision-reads.ts'

// The JSON answers pages read, as SPEC section 6 gives them. Fields added by later parts
// of the API (reasons, provenance, snippets) are optional so an older server still renders.

export type PromptAnswer = PromptView & {
  reasons?: Record<string, string>
  provenance?: {
    source?: string | null
    verified?: boolean | null
    commit?: string | null
    rev?: string | null
  } | null
}
export type PromptItem = PromptListItem & { snippet?: unknown }
export interface PromptPage {
  items: PromptItem[]
  cursor?: string
}
export interface RevisionPage {
  uri: string
  items: RevisionView[]
  cursor?: string
}
export type StatsAnswer = Awaited<ReturnType<typeof getStats>>
export type { AgentSummary, ConversationView, RevisionView }
