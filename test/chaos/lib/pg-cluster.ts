import { execFile } from 'node:child_process'
import { chownSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from '../../../bench/lib/child.ts'
import type { ChaosContext } from './context.ts'

// A private Postgres cluster the suite may crash at will: Debian's initdb and pg_ctl
// (`pg_config --bindir`), a free port, a temp dir. initdb and postgres refuse to run as
// root, so as root they run as the `postgres` OS user, in a dir that user owns.

const run = promisify(execFile)

export interface Cluster {
  url: string
  port: number
  /** `pg_ctl stop -m immediate`: every backend killed, no checkpoint, as in a crash. */
  crash(): Promise<void>
  start(): Promise<void>
  running(): boolean
}

async function bindir(): Promise<string> {
  const { stdout } = await run('pg_config', ['--bindir'])
  return stdout.trim()
}

function asPostgres(cmd: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0
    ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]]
    : [cmd, args]
}

async function pg(cmd: string, args: string[]): Promise<string> {
  const [c, a] = asPostgres(cmd, args)
  try {
    const { stdout } = await run(c, a, { timeout: 120_000 })
    return stdout
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string }
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.stderr ?? ''}${e.stdout ?? ''}`, {
      cause: err,
    })
  }
}

export async function startCluster(ctx: ChaosContext): Promise<Cluster> {
  const bin = await bindir()
  const dir = ctx.tempDir('pgcluster')
  if (process.getuid?.() === 0)
    chownSync(dir, Number(await uidOf('postgres')), Number(await gidOf('postgres')))
  const data = join(dir, 'data')
  await pg(join(bin, 'initdb'), [
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    'postgres',
    '-E',
    'UTF8',
    '--no-sync',
  ])
  const port = await freePort()
  // fsync off: the faults here kill processes, not the machine, so the page cache survives.
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`
  let up = false
  const start = async () => {
    await pg(join(bin, 'pg_ctl'), [
      '-D',
      data,
      '-l',
      join(dir, 'log'),
      '-o',
      opts,
      '-w',
      '-t',
      '60',
      'start',
    ])
    up = true
  }
  const crash = async () => {
    await pg(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop'])
    up = false
  }
  ctx.defer(`stop the private cluster on port ${port}`, async () => {
    if (existsSync(join(data, 'postmaster.pid'))) await crash()
  })
  await start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    crash,
    start,
    running: () => up,
  }
}

async function uidOf(user: string): Promise<string> {
  return (await run('id', ['-u', user])).stdout.trim()
}
async function gidOf(user: string): Promise<string> {
  return (await run('id', ['-g', user])).stdout.trim()
}
