import postgres from 'postgres'

// Raw clients and server facts for the benches; their throwaway databases come from
// test/helpers/pg-cluster.ts, as the tests' do.

/** A raw postgres.js client that passes JSON strings through, as drizzle's driver does. */
export function rawClient(url: string, max = 1): postgres.Sql {
  const client = postgres(url, { max, onnotice: () => {} })
  const serializers = client.options.serializers as Record<string, (x: unknown) => unknown>
  for (const oid of ['114', '3802']) serializers[oid] = (x) => x
  return client
}

export async function serverInfo(serverUrl: string): Promise<Record<string, string>> {
  const c = postgres(serverUrl, { max: 1, onnotice: () => {} })
  try {
    const names = [
      'server_version',
      'synchronous_commit',
      'fsync',
      'shared_buffers',
      'max_wal_size',
    ]
    const out: Record<string, string> = {}
    for (const n of names) out[n] = (await c.unsafe(`SHOW ${n}`))[0][n] as string
    return out
  } finally {
    await c.end()
  }
}

/**
 * Flushes dirty buffers now, so one phase's writes are not checkpointed (with their fsyncs)
 * during the next phase's measurement. DROP DATABASE also forces one.
 */
export async function checkpoint(serverUrl: string): Promise<void> {
  const c = postgres(serverUrl, { max: 1, onnotice: () => {} })
  try {
    await c.unsafe('CHECKPOINT')
  } finally {
    await c.end()
  }
}
