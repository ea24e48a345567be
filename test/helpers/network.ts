import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AtpAgent } from '@atproto/api'
import { Secp256k1Keypair } from '@atproto/crypto'
import { PDS } from '@atproto/pds'
import * as plc from '@did-plc/server'
import { freePort } from './node-child.ts'

// An offline atproto network for tests: a PLC directory in memory and the reference PDS,
// both in this process on loopback, the way @atproto/dev-env starts them.

export const ADMIN_PASSWORD = 'admin-pass'

export interface TestAccount {
  did: string
  handle: string
  /** Logged in as this account. */
  agent: AtpAgent
}

export interface TestNetwork {
  plcUrl: string
  /** http://localhost:<port>, also the PDS endpoint in every DID document it creates. */
  pdsUrl: string
  /** ws://localhost:<port>, for subscribeRepos. */
  pdsWsUrl: string
  pds: PDS
  createAccount(name: string): Promise<TestAccount>
  /** Handle → DID through the PDS (it answers for its own `.test` handles), or null. */
  resolveHandle(handle: string): Promise<string | null>
  takedown(did: string): Promise<void>
  untakedown(did: string): Promise<void>
  /** Deactivates through the admin API; `activate` undoes it. */
  deactivate(did: string): Promise<void>
  activate(did: string): Promise<void>
  adminHeaders(): Record<string, string>
  /** The seq of the newest event the PDS has sequenced (0 when none). */
  currentSeq(): Promise<number>
  close(): Promise<void>
}

export async function startNetwork(): Promise<TestNetwork> {
  const plcServer = plc.PlcServer.create({ db: plc.Database.mock() })
  const plcListener = await plcServer.start()
  const plcAddr = plcListener.address()
  if (!plcAddr || typeof plcAddr !== 'object') throw new Error('PLC did not bind')
  const plcUrl = `http://localhost:${plcAddr.port}`

  const dataDirectory = await mkdtemp(join(tmpdir(), 'prompt-appview-pds-'))
  const rotationKey = await Secp256k1Keypair.create({ exportable: true })
  const rotationHex = Buffer.from(await rotationKey.export()).toString('hex')
  const recoveryKey = await Secp256k1Keypair.create()
  // The PDS bakes its own URL into DID documents, so its port must be known before it starts.
  const port = await freePort()
  const pdsUrl = `http://localhost:${port}`

  const pds = await PDS.fromEnv({
    devMode: true,
    port,
    hostname: 'localhost',
    dataDirectory,
    blobstoreDiskLocation: join(dataDirectory, 'blobs'),
    didPlcUrl: plcUrl,
    recoveryDidKey: recoveryKey.did(),
    plcRotationKeyK256PrivateKeyHex: rotationHex,
    adminPassword: ADMIN_PASSWORD,
    jwtSecret: 'jwt-secret',
    serviceHandleDomains: ['.test'],
    inviteRequired: false,
    disableSsrfProtection: true,
    rateLimitsEnabled: false,
    crawlers: [],
    // Unreachable on purpose: nothing here may leave loopback.
    bskyAppViewUrl: 'https://appview.invalid',
    bskyAppViewDid: 'did:example:invalid',
    bskyAppViewCdnUrlPattern: 'http://cdn.appview.invalid/%s/%s/%s',
    modServiceUrl: 'https://moderator.invalid',
    modServiceDid: 'did:example:invalid',
  })
  await pds.start()

  const adminHeaders = () => ({
    authorization: `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`,
  })
  const admin = new AtpAgent({ service: pdsUrl })

  const updateStatus = async (did: string, body: Record<string, unknown>) => {
    await admin.com.atproto.admin.updateSubjectStatus(
      { subject: { $type: 'com.atproto.admin.defs#repoRef', did }, ...body },
      { headers: adminHeaders(), encoding: 'application/json' },
    )
  }

  return {
    plcUrl,
    pdsUrl,
    pdsWsUrl: `ws://localhost:${port}`,
    pds,
    adminHeaders,
    currentSeq: async () => (await pds.ctx.sequencer.curr()) ?? 0,
    async createAccount(name) {
      const agent = new AtpAgent({ service: pdsUrl })
      const handle = `${name}.test`
      const res = await agent.createAccount({
        handle,
        email: `${name}@example.invalid`,
        password: `${name}-password`,
      })
      return { did: res.data.did, handle, agent }
    },
    async resolveHandle(handle) {
      const url = new URL('/xrpc/com.atproto.identity.resolveHandle', pdsUrl)
      url.searchParams.set('handle', handle)
      const res = await fetch(url)
      if (!res.ok) return null
      const body = (await res.json()) as { did?: unknown }
      return typeof body.did === 'string' ? body.did : null
    },
    takedown: (did) => updateStatus(did, { takedown: { applied: true, ref: 'test' } }),
    untakedown: (did) => updateStatus(did, { takedown: { applied: false } }),
    deactivate: (did) => updateStatus(did, { deactivated: { applied: true } }),
    activate: (did) => updateStatus(did, { deactivated: { applied: false } }),
    async close() {
      await pds.destroy()
      await plcServer.destroy()
      await rm(dataDirectory, { recursive: true, force: true })
    },
  }
}
