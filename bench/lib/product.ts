import {
  CLI,
  freePort,
  type NodeChild,
  spawnNode,
  waitForHttp,
} from '../../test/helpers/node-child.ts'

// The product as the scenarios run it: one CLI command (`run`, `ingest`, `demo`, `serve`)
// as its own process, on a free loopback port, logging only warnings so its output stays
// small enough to quote when it fails.

export interface ProductProcess {
  child: NodeChild
  port: number
  /** http://127.0.0.1:<port> */
  base: string
}

export async function spawnProduct(
  args: string[],
  env: Record<string, string>,
  execArgv: string[],
): Promise<ProductProcess> {
  const port = await freePort()
  const child = spawnNode(
    [CLI, ...args],
    { HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
    { execArgv },
  )
  return { child, port, base: `http://127.0.0.1:${port}` }
}

/** Waits until the process answers /readyz (migrations done, sources started). */
export function productReady(p: ProductProcess, timeoutMs?: number): Promise<void> {
  return waitForHttp(`${p.base}/readyz`, p.child, timeoutMs)
}

/** `prompt-appview run` following a local Jetstream, with DID lookups sent to `plcUrl`. */
export function spawnRun(
  o: { databaseUrl: string; jetstreamUrl: string; plcUrl: string; env?: Record<string, string> },
  execArgv: string[],
): Promise<ProductProcess> {
  return spawnProduct(
    ['run'],
    { DATABASE_URL: o.databaseUrl, JETSTREAM_URL: o.jetstreamUrl, PLC_URL: o.plcUrl, ...o.env },
    execArgv,
  )
}
