import { sql } from 'drizzle-orm'
import type { Config } from '../config.ts'
import { collectionsOf } from '../config.ts'
import { runBackfill } from '../ingest/backfill.ts'
import { resolverFor } from '../ingest/create-source.ts'
import { indexSnapshot, onShutdownSignal, openRuntime } from './runtime.ts'

export interface BackfillCommandOptions {
  dids: string[]
  concurrency: number
  reset: boolean
}

export async function backfillCommand(
  config: Config,
  opts: BackfillCommandOptions,
): Promise<number> {
  const rt = await openRuntime(config, { migrate: true })
  const { ctx } = rt
  const abort = new AbortController()
  onShutdownSignal(ctx.logger, async () => abort.abort())
  try {
    if (opts.reset) await ctx.db.rows(sql`DELETE FROM backfill_repos`)
    const summary = await runBackfill({
      logger: ctx.logger,
      metrics: ctx.metrics,
      resolver: resolverFor(config),
      collections: collectionsOf(config),
      relayUrl: config.relayUrl,
      dids: opts.dids.length > 0 ? opts.dids : undefined,
      concurrency: opts.concurrency,
      isDone: async (did) =>
        (await ctx.db.rows(sql`SELECT 1 FROM backfill_repos WHERE did = ${did}`)).length > 0,
      markDone: async (did, rev) => {
        await ctx.db.rows(sql`INSERT INTO backfill_repos (did, rev, finished_at) VALUES (${did}, ${rev}, now())
          ON CONFLICT (did) DO UPDATE SET rev = excluded.rev, finished_at = excluded.finished_at`)
      },
      // Each repo in its own transaction, beside live ingestion if it runs.
      emit: (snapshot) => indexSnapshot(rt, snapshot),
      signal: abort.signal,
      allowPrivateNetwork: config.allowPrivateNetwork,
    })
    ctx.logger.info(summary, 'backfill finished')
    process.stderr.write(
      `backfill: ${summary.repos} repos listed, ${summary.done} done, ${summary.skipped} already done, ${summary.failed} failed, ${summary.records} records\n`,
    )
    return summary.failed > 0 ? 1 : 0
  } finally {
    await rt.close()
  }
}
