import { execFile } from 'node:child_process'
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'
import { freePort } from './node-child.ts'

// The one place tests, the chaos suite and the benches get Postgres from: a private,
// throwaway cluster (initdb + pg_ctl from `pg_config --bindir`) in a temp dir on a free port,
// which a test may stop with `-m immediate` mid-write without touching the shared server;
// and throwaway databases on a server (the shared one or a private cluster), dropped after.
// initdb and postgres refuse to run as root: as root they run as the `postgres` OS user, in
// a directory that user owns.

const run = promisify(execFile)

export interface PgCluster {
  readonly url: string
  readonly port: number
  start(): Promise<void>
  /** `pg_ctl stop -m immediate`: every backend killed, no checkpoint, as in a crash. */
  stopImmediate(): Promise<void>
  /** Stops the cluster (if it runs) and removes its directory. */
  destroy(): Promise<void>
}

const asRoot = userInfo().uid === 0

/** Runs a Postgres binary, as the `postgres` OS user when we are root; stderr in the error. */
async function pgRun(bin: string, args: string[]): Promise<void> {
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args]
  try {
    await run(cmd, argv, { timeout: 120_000 })
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string }
    throw new Error(`${bin} ${args.join(' ')} failed: ${e.stderr ?? ''}${e.stdout ?? ''}`, {
      cause: err,
    })
  }
}

async function output(cmd: string, args: string[]): Promise<string> {
  return (await run(cmd, args)).stdout.trim()
}

/** A temp dir the cluster's OS user owns, mode 0700 as initdb wants it. */
async function clusterDir(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'pav-pgcluster-'))
  if (asRoot) {
    const [uid, gid] = [
      await output('id', ['-u', 'postgres']),
      await output('id', ['-g', 'postgres']),
    ]
    chownSync(dir, Number(uid), Number(gid))
  }
  chmodSync(dir, 0o700)
  return dir
}

/** Creates and starts a private cluster; `destroy` it when done. */
export async function startPgCluster(): Promise<PgCluster> {
  const bin = await output('pg_config', ['--bindir'])
  const dir = await clusterDir()
  const data = join(dir, 'data')
  const port = await freePort()
  const initdb = ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']
  await pgRun(join(bin, 'initdb'), initdb)
  const ctl = (args: string[]) => pgRun(join(bin, 'pg_ctl'), ['-D', data, ...args])
  // fsync off: the faults here kill processes, not the machine, so the page cache survives.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`
  const cluster: PgCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start: () => ctl(['start', '-w', '-t', '60', '-l', join(dir, 'log'), '-o', options]),
    stopImmediate: () => ctl(['stop', '-m', 'immediate', '-w']),
    destroy: async () => {
      // Stopping a cluster already stopped fails; the directory goes either way.
      await ctl(['stop', '-m', 'immediate', '-w']).catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
  await cluster.start()
  return cluster
}

export interface TempDatabase {
  name: string
  url: string
  drop(): Promise<void>
}

async function admin(serverUrl: string, statement: string): Promise<void> {
  const client = postgres(serverUrl, { max: 1, onnotice: () => {} })
  try {
    await client.unsafe(statement)
  } finally {
    await client.end({ timeout: 5 })
  }
}

/**
 * A fresh database on the server `serverUrl` names, `<label>_<pid>_<random>`: each run gets
 * its own, so results never depend on what an earlier run left behind.
 */
export async function createTempDatabase(serverUrl: string, label: string): Promise<TempDatabase> {
  const name = `${label}_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  await admin(serverUrl, `CREATE DATABASE ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    drop: () => admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  }
}
