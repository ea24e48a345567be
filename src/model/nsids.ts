// The three collections the AppView indexes and the role each plays. The NSIDs are
// configurable (config.ts), the roles are not: code speaks of roles and turns them into
// collections only at the edges (SQL tables, at-uris, lists of wanted collections).

export interface Nsids {
  prompt: string
  conversation: string
  agent: string
}

export type Role = 'prompt' | 'conversation' | 'agent'
export const ROLES: Role[] = ['prompt', 'conversation', 'agent']
