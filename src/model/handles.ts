/**
 * Verified handle of `did`, or null. `claimed` is the handle an event announced (null when
 * it named none): a hint only, since the DID document and the handle's own resolution are
 * what count (ingest/identity.ts makes one; the sources and indexer/handle-lookups.ts call it).
 */
export type HandleVerifier = (did: string, claimed: string | null) => Promise<string | null>
