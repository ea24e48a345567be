import { FILTER_NAMES, FLAG_BITS, FLAG_NAMES } from '../../model/flags.ts'
import type { Database } from '../client.ts'
import { readAgainIfConnectionLost } from '../retry.ts'
import { visibleCounts } from '../schema.ts'
import type { FlagCounts } from './prompts.ts'

// The visible rows of each record table as their triggers keep them (visible_counts,
// migration 0011), so a count reads a few rows instead of scanning every visible one.

export interface RecordCounts {
  prompts: number
  conversations: number
  agents: number
  flags: FlagCounts
}

export async function readVisibleCounts(db: Database): Promise<RecordCounts> {
  const rows = await readAgainIfConnectionLost(() => db.orm.select().from(visibleCounts))
  const flags = Object.fromEntries(FILTER_NAMES.map((f) => [f, 0])) as FlagCounts
  const out: RecordCounts = { prompts: 0, conversations: 0, agents: 0, flags }
  for (const { tbl, flags: bits, n } of rows) {
    const count = Number(n)
    if (tbl === 'conversations' || tbl === 'agents') out[tbl] += count
    if (tbl !== 'prompts') continue
    out.prompts += count
    if (bits === 0) flags.ok += count
    for (const f of FLAG_NAMES) if ((bits & FLAG_BITS[f]) !== 0) flags[f] += count
  }
  return out
}
