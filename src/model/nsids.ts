// The three collections the AppView indexes and the role each plays. The NSIDs are
// configurable (config/config.ts), the roles are not: code speaks of roles and turns them into
// collections only at the edges (SQL tables, at-uris, lists of wanted collections).

export type Role = 'prompt' | 'conversation' | 'agent'
export const ROLES: readonly Role[] = ['prompt', 'conversation', 'agent']

/** The collection (NSID) of each role: the one role-to-collection table. */
export type Nsids = Record<Role, string>

/** The role `collection` plays here, or undefined for a collection this index does not keep. */
export function roleOf(nsids: Nsids, collection: string): Role | undefined {
  return ROLES.find((role) => nsids[role] === collection)
}

/** The indexed collections, in ROLES order. */
export function indexedCollections(nsids: Nsids): string[] {
  return ROLES.map((role) => nsids[role])
}
