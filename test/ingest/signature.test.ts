import { randomBytes, randomInt } from 'node:crypto'
import { type Keypair, P256Keypair, Secp256k1Keypair, verifySignature } from '@atproto/crypto'
import type { IdResolver } from '@atproto/identity'
import {
  blocksToCarFile,
  cidForRecord,
  MemoryBlockstore,
  type RecordCreateOp,
  Repo,
  WriteOpAction,
} from '@atproto/repo'
import { type CommitEvt, parseCommitAuthenticated } from '@atproto/sync'
import { describe, expect, it } from 'vitest'
import { verifySignatureNative } from '../../src/ingest/firehose/native-verify.ts'
import { verifyCommit } from '../../src/ingest/firehose/signature.ts'
import { PROMPT } from '../helpers/ingest-kit.ts'

// The native verifier must give @atproto/crypto's verdict on every input, so each case runs
// both and compares; "throws" is a verdict of its own (the library throws on a malformed key
// or signature, which decides whether a commit gets a key-refresh retry).

type Verdict = 'valid' | 'invalid' | 'throws'
type CommitBody = Parameters<typeof parseCommitAuthenticated>[1]

const CURVES = [
  {
    name: 'secp256k1',
    create: () => Secp256k1Keypair.create(),
    n: 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n,
  },
  {
    name: 'P-256',
    create: () => P256Keypair.create(),
    n: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
  },
]

async function verdict(f: () => boolean | Promise<boolean>): Promise<Verdict> {
  try {
    return (await f()) ? 'valid' : 'invalid'
  } catch {
    return 'throws'
  }
}

async function both(key: string, data: Uint8Array, sig: Uint8Array) {
  const native = await verdict(() => verifySignatureNative(key, data, sig))
  const library = await verdict(() => verifySignature(key, data, sig))
  return { native, library }
}

const toBig = (b: Uint8Array) => BigInt(`0x${Buffer.from(b).toString('hex') || '0'}`)
const to32 = (v: bigint) => {
  if (v < 0n || v >= 1n << 256n) throw new Error('not a 32-byte integer')
  return Buffer.from(v.toString(16).padStart(64, '0'), 'hex')
}
const compact = (r: bigint, s: bigint) => new Uint8Array(Buffer.concat([to32(r), to32(s)]))
const rOf = (sig: Uint8Array) => toBig(sig.subarray(0, 32))
const sOf = (sig: Uint8Array) => toBig(sig.subarray(32))
/** The other signature ECDSA accepts for the same message: (r, n - s). */
const highS = (sig: Uint8Array, n: bigint) => compact(rOf(sig), n - sOf(sig))

function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const out = Uint8Array.from(bytes)
  out[bit >> 3] ^= 1 << (bit & 7)
  return out
}

function der(sig: Uint8Array): Uint8Array {
  const int = (b: Uint8Array) => {
    let i = 0
    while (i < b.length - 1 && b[i] === 0 && b[i + 1] < 0x80) i++
    const v = b[i] >= 0x80 ? Buffer.concat([Buffer.from([0]), b.subarray(i)]) : b.subarray(i)
    return Buffer.concat([Buffer.from([0x02, v.length]), v])
  }
  const body = Buffer.concat([int(sig.subarray(0, 32)), int(sig.subarray(32))])
  return new Uint8Array(Buffer.concat([Buffer.from([0x30, body.length]), body]))
}

describe.each(CURVES)('verifySignatureNative on $name', ({ create, n }) => {
  it('accepts a valid signature and rejects a wrong key or a flipped bit', async () => {
    const kp = await create()
    const other = await create()
    const data = randomBytes(100)
    const sig = await kp.sign(data)
    expect(await both(kp.did(), data, sig)).toEqual({ native: 'valid', library: 'valid' })
    expect(await both(other.did(), data, sig)).toEqual({ native: 'invalid', library: 'invalid' })
    const badData = flipBit(data, 13)
    expect(await both(kp.did(), badData, sig)).toEqual({ native: 'invalid', library: 'invalid' })
    for (const bit of [0, 100, 255, 256, 300, 511]) {
      const res = await both(kp.did(), data, flipBit(sig, bit))
      expect(res.native).not.toBe('valid')
      expect(res.native).toBe(res.library)
    }
  })

  it('rejects the high-S twin of a valid signature, as the library does', async () => {
    const kp = await create()
    const data = randomBytes(64)
    const sig = await kp.sign(data)
    expect(sOf(sig) <= n >> 1n).toBe(true)
    const twin = highS(sig, n)
    expect(sOf(twin) > n >> 1n).toBe(true)
    expect(highS(twin, n)).toEqual(sig)
    expect(await both(kp.did(), data, twin)).toEqual({ native: 'invalid', library: 'invalid' })
  })

  it('throws where the library throws: DER, wrong lengths, r or s out of range', async () => {
    const kp = await create()
    const data = randomBytes(32)
    const sig = await kp.sign(data)
    const r = rOf(sig)
    const s = sOf(sig)
    const malformed = [
      der(sig),
      sig.subarray(0, 63),
      new Uint8Array([...sig, 0]),
      new Uint8Array(0),
      compact(0n, s),
      compact(r, 0n),
      compact(n, s),
      compact(r, n),
      compact((1n << 256n) - 1n, s),
    ]
    for (const bad of malformed)
      expect(await both(kp.did(), data, bad)).toEqual({ native: 'throws', library: 'throws' })
  })

  it('throws where the library throws on a malformed or unsupported key', async () => {
    const kp = await create()
    const data = randomBytes(32)
    const sig = await kp.sign(data)
    const did = kp.did()
    const keys = [
      'did:web:example.com',
      did.slice('did:key:'.length),
      `${did.slice(0, -4)}0OIl`, // not base58
      did.slice(0, -2),
      'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', // ed25519
    ]
    for (const key of keys)
      expect(await both(key, data, sig)).toEqual({ native: 'throws', library: 'throws' })
  })

  it('agrees with the library on random valid, tampered, high-S and wrong-key inputs', async () => {
    const keys = await Promise.all([create(), create(), create()])
    const seen = new Map<string, number>()
    for (let i = 0; i < 200; i++) {
      const kp = keys[i % keys.length]
      const data = randomBytes(randomInt(0, 600))
      const sig = await kp.sign(data)
      const cases: [string, Uint8Array, Uint8Array][] = [
        [kp.did(), data, sig],
        [kp.did(), data, highS(sig, n)],
        i % 2 === 0
          ? [kp.did(), data, flipBit(sig, randomInt(0, 512))]
          : [kp.did(), data.length ? flipBit(data, randomInt(0, data.length * 8)) : data, sig],
        [keys[(i + 1) % keys.length].did(), data, sig],
      ]
      for (const [key, d, sg] of cases) {
        const res = await both(key, d, sg)
        expect(res.native).toBe(res.library)
        seen.set(res.native, (seen.get(res.native) ?? 0) + 1)
      }
    }
    expect(seen.get('valid')).toBeGreaterThanOrEqual(200)
    expect(seen.get('invalid')).toBeGreaterThanOrEqual(400)
  }, 60_000)
})

// Commit level: verifyCommit against parseCommitAuthenticated on the same frames.

const DID = 'did:plc:bbbbbbbbbbbbbbbbbbbbbbbb'
const OTHER = 'app.example.other'

/** Signs with the high-S twin of what `kp` signs: valid ECDSA, forbidden by atproto. */
const malleable = (kp: Keypair, n: bigint): Keypair => ({
  jwtAlg: kp.jwtAlg,
  did: () => kp.did(),
  sign: async (msg) => highS(await kp.sign(msg), n),
})

async function commitFrame(signer: Keypair): Promise<CommitBody> {
  const record = (text: string) => ({ $type: PROMPT, text, createdAt: '2026-01-01T00:00:00Z' })
  const repo = await Repo.create(new MemoryBlockstore(), DID, signer, [
    { action: WriteOpAction.Create, collection: PROMPT, rkey: 'old', record: record('old') },
  ])
  const write = (
    collection: RecordCreateOp['collection'],
    rkey: string,
    text: string,
  ): RecordCreateOp => ({
    action: WriteOpAction.Create,
    collection,
    rkey,
    record: record(text),
  })
  const commit = await repo.formatCommit(
    [write(PROMPT, 'a', 'one'), write(PROMPT, 'b', 'two'), write(OTHER, 'c', 'three')],
    signer,
  )
  const [one, three] = [await cidForRecord(record('one')), await cidForRecord(record('three'))]
  return {
    seq: 1,
    rebase: false,
    tooBig: false,
    repo: DID,
    commit: commit.cid,
    rev: commit.rev,
    since: null,
    blocks: await blocksToCarFile(commit.cid, commit.relevantBlocks),
    ops: [
      { action: 'create', path: `${PROMPT}/a`, cid: one },
      { action: 'create', path: `${PROMPT}/b`, cid: one }, // lies about its cid: not proven
      { action: 'delete', path: `${PROMPT}/gone`, cid: null }, // proven absent
      { action: 'create', path: `${OTHER}/c`, cid: three }, // not a wanted collection
    ],
    blobs: [],
    time: '2026-01-01T00:00:00.000Z',
  } as unknown as CommitBody
}

const summary = (evts: CommitEvt[]) =>
  evts.map((e) => ({
    uri: e.uri.toString(),
    event: e.event,
    cid: 'cid' in e ? e.cid.toString() : null,
    record: 'record' in e ? e.record : null,
    rev: e.rev,
    blocks: [...e.blocks.entries()].map((b) => b.cid.toString()).sort(),
  }))

/** Both parsers on one frame, each with its own key lookup log. */
async function compare(body: CommitBody, keyFor: (forceRefresh: boolean) => string) {
  const match = (c: string) => c === PROMPT
  const run = async (f: (lookup: (f: boolean) => Promise<string>) => Promise<CommitEvt[]>) => {
    const calls: boolean[] = []
    const lookup = async (force: boolean) => {
      calls.push(force)
      return keyFor(force)
    }
    try {
      return { calls, ok: summary(await f(lookup)) }
    } catch (err) {
      return { calls, error: (err as Error).constructor.name }
    }
  }
  const native = await run(
    async (lookup) => (await verifyCommit((_, f) => lookup(f), body, match)).events,
  )
  const library = await run((lookup) => {
    const resolveAtprotoKey = (_: string, f?: boolean) => lookup(f ?? false)
    const idResolver = { did: { resolveAtprotoKey } } as unknown as IdResolver
    return parseCommitAuthenticated(idResolver, body, match)
  })
  expect(native).toEqual(library)
  return native
}

describe.each(CURVES)('verifyCommit on $name', ({ create, n }) => {
  it('proves the same ops as parseCommitAuthenticated', async () => {
    const kp = await create()
    const res = await compare(await commitFrame(kp), () => kp.did())
    expect(res.calls).toEqual([false])
    expect(res.ok?.map((e) => `${e.event} ${e.uri}`)).toEqual([
      `create at://${DID}/${PROMPT}/a`,
      `delete at://${DID}/${PROMPT}/gone`,
    ])
  })

  it('retries once with a refreshed key, then gives up the same way', async () => {
    const kp = await create()
    const stale = (await create()).did()
    const body = await commitFrame(kp)
    const rotated = await compare(body, (force) => (force ? kp.did() : stale))
    expect(rotated.calls).toEqual([false, true])
    expect(rotated.ok).toHaveLength(2)
    const wrong = await compare(body, () => stale)
    expect(wrong).toEqual({ calls: [false, true], error: 'RepoVerificationError' })
    const otherRepo = await compare({ ...body, repo: 'did:plc:cccccccccccccccccccccccc' }, () =>
      kp.did(),
    )
    expect(otherRepo).toEqual({ calls: [false, true], error: 'RepoVerificationError' })
  })

  it('rejects a commit signed with a high-S signature', async () => {
    const kp = await create()
    const res = await compare(await commitFrame(malleable(kp, n)), () => kp.did())
    expect(res).toEqual({ calls: [false, true], error: 'RepoVerificationError' })
  })

  it('does not retry when the key itself is malformed', async () => {
    const kp = await create()
    const res = await compare(await commitFrame(kp), () => 'did:key:zQ3sh')
    expect(res.calls).toEqual([false])
    expect(res.error).toBeDefined()
  })
})
