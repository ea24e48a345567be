// Flags are stored as bits so a set is one integer, cheap to compare when deciding whether a
// change row is due, and each has a partial index. Where each rule of SPEC section 3 lives
// (the evidence probes restate the SQL rules; test/indexer/reasons.test.ts holds them to the
// reference model):
//
// | flag               | decided by                                       | when           | sentence (api/flag-reasons.ts) reads                  |
// |--------------------|--------------------------------------------------|----------------|-------------------------------------------------------|
// | mismatched         | model/prompt-record.ts baseFlagsOf (record only) | on its write   | the record's `conversation`                           |
// | coreMemoryDetached | model/prompt-record.ts baseFlagsOf (record only) | on its write   | the record's content and coreMemory                   |
// | invalid            | model/prompt-record.ts validation (lexicon)      | on its write   | the row's validation_error                            |
// | orphaned           | db/recompute-flags.ts (conversation join)        | each batch     | db/flag-evidence.ts: the conversation row             |
// | staleTemplate      | db/recompute-flags.ts (agent template, or the    | each batch     | db/flag-evidence.ts: the agent's hash, else the newest |
// |                    | group window over later evidence)                |                | later compile that differs                            |
// | staleMemory        | db/recompute-flags.ts (group window)             | each batch     | db/flag-evidence.ts: the newest later differing compile |
//
// Whether a prompt is evidence for others (valid, compiledAt at most five minutes ahead of
// the event that brought it) is decided once, on its write (db/writes.ts, `evidence`), and
// stored in prompts.evidence; the recompute and the probes only read that column.

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
