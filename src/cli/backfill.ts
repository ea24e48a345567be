import { randomUUID } from 'node:crypto'
import { type Config, collectionsOf } from '../config/config.ts'
import {
  forgetBackfilledRepos,
  isRepoBackfilled,
  markRepoBackfilled,
} from '../db/backfill-repos.ts'
import { recordBackfillRun } from '../db/backfill-runs.ts'
import { retryWhileDbDown } from '../db/retry.ts'
import { runBackfill } from '../ingest/backfill/backfill.ts'
import { resolverFor } from '../ingest/did-resolver.ts'
import { indexSnapshot, openRuntime } from './runtime.ts'
import { onShutdownSignal } from './shutdown.ts'

export async function backfillCommand(
  config: Config,
  opts: { dids: string[]; concurrency: number; reset: boolean },
): Promise<number> {
  const rt = await openRuntime(config, { migrate: true })
  const { ctx } = rt
  const abort = new AbortController()
  onShutdownSignal(ctx.logger, rt.shutdown)
  // The store calls wait out a database outage; a repo is marked done only once indexed.
  const store = <T>(what: string, fn: () => Promise<T>) =>
    retryWhileDbDown(fn, { logger: ctx.logger, what: `backfill: ${what}`, signal: abort.signal })
  try {
    if (opts.reset) await forgetBackfilledRepos(ctx.db)
    const runId = randomUUID()
    const run = runBackfill({
      logger: ctx.logger,
      metrics: ctx.metrics,
      resolver: resolverFor(config, ctx.metrics),
      collections: collectionsOf(config),
      relayUrl: config.relayUrl,
      dids: opts.dids.length > 0 ? opts.dids : undefined,
      concurrency: opts.concurrency,
      isDone: (did) => store('checking a repo', () => isRepoBackfilled(ctx.db, did)),
      markDone: (did, rev) =>
        store('marking a repo done', () => markRepoBackfilled(ctx.db, did, rev)),
      // Each repo in its own transaction, beside live ingestion if it runs.
      emit: (snapshot) => store('indexing a repo', () => indexSnapshot(rt, snapshot)),
      signal: abort.signal,
      // Not through `store`: the overview's notice never holds the backfill up.
      recordProgress: (p, finished) => recordBackfillRun(ctx.db, runId, p, finished),
      allowPrivateNetwork: config.allowPrivateNetwork,
    })
    // A signal stops listing and fetching, and the database closes only once the repo in
    // flight is indexed or given up. Its failure is the command's, thrown below.
    rt.shutdown.add('backfill', async () => {
      abort.abort()
      await run.catch(() => {})
    })
    const summary = await run
    ctx.logger.info(summary, 'backfill finished')
    process.stderr.write(
      `backfill: ${summary.repos} repos listed, ${summary.done} done, ${summary.skipped} already done, ${summary.failed} failed, ${summary.records} records\n`,
    )
    return summary.failed > 0 ? 1 : 0
  } finally {
    await rt.close()
  }
}
