import { mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AtpAgent } from '@atproto/api'
import { Secp256k1Keypair } from '@atproto/crypto'
import { PDS } from '@atproto/pds'
import * as plc from '@did-plc/server'

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

/**
 * Node 24's node::ObjectWrap removes a per-object cleanup hook in its destructor, and a
 * garbage collection that runs with no context entered aborts the process there
 * ("RemoveEnvironmentCleanupHook … Assertion failed: (env) != nullptr", nodejs/node#65195,
 * DataDog/pprof-nodejs#385). better-sqlite3's statements and databases are ObjectWraps, and
 * the PDS opens and closes a database per request, so a test that allocates enough after
 * some PDS traffic dies at random. Keeping every native statement (and so its database)
 * reachable means none is ever finalized by the GC; the process frees them at exit. The
 * growth is a few objects per request, which a test run can afford.
 */
const retained = new Set<unknown>()
// On the shared native prototype, not in this module: vitest re-imports modules per test
// file, but the addon (and so the patch) lives once per process.
const PATCHED = Symbol.for('prompt-appview.test.sqlite-retain')
type Methods = Record<string | symbol, unknown>

function keepSqliteObjectsAlive(): void {
  const require = createRequire(import.meta.url)
  const Sqlite = require('better-sqlite3') as new (path: string) => object
  const probe = new Sqlite(':memory:')
  const native = Object.getOwnPropertySymbols(probe)
    .map((sym) => (probe as Methods)[sym])
    .find(
      (v): v is { prepare: (...a: unknown[]) => object } =>
        typeof (v as { prepare?: unknown })?.prepare === 'function',
    )
  if (!native) throw new Error('better-sqlite3 internals changed: cannot apply the GC workaround')
  const dbProto = Object.getPrototypeOf(native) as Methods
  if (dbProto[PATCHED]) return
  dbProto[PATCHED] = true
  retained.add(probe)
  const stmtProto = Object.getPrototypeOf(native.prepare('SELECT 1', probe, false)) as Methods
  for (const [proto, method] of [
    [dbProto, 'prepare'],
    [stmtProto, 'iterate'],
  ] as const) {
    const original = proto[method] as (...a: unknown[]) => unknown
    proto[method] = function (this: unknown, ...args: unknown[]) {
      const made = original.apply(this, args)
      retained.add(this)
      retained.add(made)
      return made
    }
  }
}

// The PDS bakes its own URL into DID documents, so its port must be known before it starts.
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })
}

export async function startNetwork(): Promise<TestNetwork> {
  keepSqliteObjectsAlive()
  const plcServer = plc.PlcServer.create({ db: plc.Database.mock() })
  const plcListener = await plcServer.start()
  const plcAddr = plcListener.address()
  if (!plcAddr || typeof plcAddr !== 'object') throw new Error('PLC did not bind')
  const plcUrl = `http://localhost:${plcAddr.port}`

  const dataDirectory = await mkdtemp(join(tmpdir(), 'prompt-appview-pds-'))
  const rotationKey = await Secp256k1Keypair.create({ exportable: true })
  const rotationHex = Buffer.from(await rotationKey.export()).toString('hex')
  const recoveryKey = await Secp256k1Keypair.create()
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
