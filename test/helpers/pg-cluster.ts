import { execFile } from 'node:child_process'
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from '../../bench/lib/child.ts'

// A private, throwaway PostgreSQL cluster (initdb + pg_ctl from `pg_config --bindir`) in a
// temp dir on a free port, so a test can stop it with `-m immediate` mid-write without
// touching the shared server. initdb and postgres refuse to run as root: as root they
// run as the `postgres` OS user, in a directory that user owns.

const run = promisify(execFile)

export interface PgCluster {
  readonly url: string
  readonly port: number
  start(): Promise<void>
  /** `pg_ctl stop -m immediate`: the server dies without a checkpoint, as on a crash. */
  stopImmediate(): Promise<void>
  destroy(): Promise<void>
}

async function binDir(): Promise<string> {
  const { stdout } = await run('pg_config', ['--bindir'])
  return stdout.trim()
}

const asRoot = userInfo().uid === 0

/** Runs a Postgres binary, as the `postgres` OS user when we are root. */
function pgRun(bin: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return asRoot ? run('runuser', ['-u', 'postgres', '--', bin, ...args]) : run(bin, args)
}

export async function startPgCluster(): Promise<PgCluster> {
  const bin = await binDir()
  const dir = mkdtempSync(join(tmpdir(), 'pav-pgcluster-'))
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres'])
    const { stdout: gid } = await run('id', ['-g', 'postgres'])
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()))
  }
  chmodSync(dir, 0o700)
  const data = join(dir, 'data')
  const port = await freePort()
  await pgRun(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  const ctl = (args: string[]) => pgRun(join(bin, 'pg_ctl'), ['-D', data, ...args])
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`
  const cluster: PgCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start: async () => {
      await ctl(['start', '-w', '-t', '60', '-l', join(dir, 'log'), '-o', options])
    },
    stopImmediate: async () => {
      await ctl(['stop', '-m', 'immediate', '-w'])
    },
    destroy: async () => {
      await ctl(['stop', '-m', 'immediate', '-w']).catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
  await cluster.start()
  return cluster
}
