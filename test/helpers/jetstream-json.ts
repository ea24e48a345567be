import type { JetstreamJson } from '../../demo-network/jetstream-server.ts'
import { v2Envelope } from '../../demo-network/jetstream-v2-frames.ts'
import { COLLECTIONS, PROMPT } from './ingest-kit.ts'

// Jetstream frames as they come over the wire: v1 JSON events of one DID numbered by `n`
// (time_us T0 + n ms, rev and rkey tid(n)), and v2 `subscribeEvents` messages.

export const DID = 'did:plc:ewvi7nxzyoun6zhxrhs64oiz'
export const CID = 'bafyreibnoelefnzgwbcacyt4vh52ymxvzbjq7mmqhtcnwarfq4lzegsiqe'
export const T0 = 1_764_460_800_000_000

// TIDs are 13 base32-sortable chars; the last two vary with `n` so each commit is distinct.
const S32 = '234567abcdefghijklmnopqrstuvwxyz'
export const tid = (n: number) => `3m6sm7ncql5${S32[(n >> 5) % 32]}${S32[n % 32]}`

/** Commit `n`: a create of a prompt unless `collection`/`operation` say otherwise; other fields override. */
export function commit(n: number, o: Partial<Record<string, unknown>> = {}): JetstreamJson {
  const { collection = PROMPT, operation = 'create', ...rest } = o
  const isDelete = operation === 'delete'
  return {
    did: DID,
    time_us: T0 + n * 1000,
    kind: 'commit',
    commit: {
      rev: tid(n),
      operation,
      collection,
      rkey: tid(n),
      ...(isDelete ? {} : { record: { $type: collection, n }, cid: CID }),
      ...rest,
    },
  }
}

/** Account event `n`: taken down unless `active`/`status` say otherwise. */
export function account(
  n: number,
  { active = false, status = 'takendown' }: { active?: boolean; status?: string | null } = {},
) {
  return {
    did: DID,
    time_us: T0 + n * 1000,
    kind: 'account',
    account: { active, did: DID, seq: 100 + n, status, time: '2025-11-30T00:00:00.020Z' },
  }
}

export function identity(n: number, { handle = 'ada.example.com' }: { handle?: string } = {}) {
  return {
    did: DID,
    time_us: T0 + n * 1000,
    kind: 'identity',
    identity: { did: DID, handle, seq: 100 + n, time: '2025-11-30T00:00:00.021Z' },
  }
}

export const V2_NS = 'network.bsky.jetstream.subscribeEvents'
export const V2_TIME = '2026-08-14T12:00:00.123456Z'

/**
 * A v2 `message` frame with a `kind` payload (commit, identity, account, sync, labels...):
 * DID and V2_TIME unless `fields` name others (undefined leaves one out).
 */
export function v2Frame(kind: string, fields: Record<string, unknown> = {}): string {
  return v2Envelope({ $type: `${V2_NS}#${kind}`, did: DID, time: V2_TIME, ...fields })
}

/** The fields of a v2 delete of record `n` (rev and rkey tid(n)): the smallest commit. */
export function v2Delete(n: number, collection = COLLECTIONS[0]): Record<string, unknown> {
  return { rev: tid(n), operation: 'delete', collection, rkey: tid(n) }
}
