// Deeper than any real record; stops a hostile line from exhausting the stack.
const MAX_DEPTH = 128

/**
 * Postgres jsonb rejects U+0000 and unpaired surrogates, so they become U+FFFD. Copy on
 * write: returns the same reference when nothing changed, which tells the caller. An integer
 * beyond ±2^53 throws: JSON.parse has already rounded it, so the record no longer matches its
 * CID (the firehose and backfill skip the same records, see lex-json.ts).
 */
export function sanitizeJson(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return cleanString(value)
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) {
    throw new Error(`integer ${value} is beyond ±2^53: JSON.parse has rounded it`)
  }
  if (typeof value !== 'object' || value === null) return value
  if (depth > MAX_DEPTH) throw new Error(`record nested deeper than ${MAX_DEPTH}`)
  return Array.isArray(value)
    ? sanitizeArray(value, depth)
    : sanitizeObject(value as Record<string, unknown>, depth)
}

function sanitizeArray(value: unknown[], depth: number): unknown[] {
  let out: unknown[] | null = null
  for (let i = 0; i < value.length; i++) {
    const next = sanitizeJson(value[i], depth + 1)
    if (next !== value[i] && out === null) out = value.slice()
    if (out !== null) out[i] = next
  }
  return out ?? value
}

function sanitizeObject(value: Record<string, unknown>, depth: number): object {
  let changed = false
  const entries: Array<[string, unknown]> = []
  for (const [k, v] of Object.entries(value)) {
    const key = cleanString(k)
    const next = sanitizeJson(v, depth + 1)
    if (key !== k || next !== v) changed = true
    entries.push([key, next])
  }
  return changed ? Object.fromEntries(entries) : value
}

// ES2024 methods that Node 24 has; the shared tsconfig's lib stops at es2023.
type Es2024String = string & { isWellFormed(): boolean; toWellFormed(): string }

function cleanString(s: string): string {
  const wellFormed = (s as Es2024String).isWellFormed()
  if (wellFormed && !s.includes('\u0000')) return s
  const fixed = wellFormed ? s : (s as Es2024String).toWellFormed()
  return fixed.replaceAll('\u0000', '\uFFFD')
}
