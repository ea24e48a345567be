// Flags are stored as bits so a set is one integer, cheap to compare when deciding whether a
// change row is due, and each has a partial index. Where each rule is decided and explained:
// ARCHITECTURE.md, "Flags: where each rule lives".

export const FLAG_BITS = {
  orphaned: 1,
  mismatched: 2,
  staleTemplate: 4,
  staleMemory: 8,
  coreMemoryDetached: 16,
  invalid: 32,
} as const

export type FlagName = keyof typeof FLAG_BITS
export const FLAG_NAMES = Object.keys(FLAG_BITS) as FlagName[]
/** Flag names a list can filter on: every flag, and `ok` for none. */
export const FILTER_NAMES = [...FLAG_NAMES, 'ok'] as const

export function flagsToNames(bits: number): FlagName[] {
  return FLAG_NAMES.filter((name) => (bits & FLAG_BITS[name]) !== 0)
}

/** Hashes compare lowercase and without an optional `sha256:` prefix. */
export function normalizeHash(hash: string): string {
  return hash.toLowerCase().replace(/^sha256:/, '')
}
