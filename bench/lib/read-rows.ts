import type { ServerRuns } from './read-load.ts'
import type { Check, Row } from './report.ts'
import { row } from './report.ts'

// The read benchmark's table: the product against the plain Fastify + postgres.js baseline
// (the targets of issue 14), and the bare constant route as the ceiling of HTTP alone.

/** Every answer of one measurement was a 2xx (autocannon) or a 200 (paced). */
export function answerCheck(name: string, r: unknown): Check[] {
  if (typeof r !== 'object' || r === null) return []
  if ('non2xx' in r) {
    const a = r as { non2xx: number; errors: number; total: number }
    return [
      {
        name: `${name}: every answer 2xx`,
        ok: a.non2xx === 0 && a.errors === 0 && a.total > 0,
        detail: `${a.total} answers, ${a.non2xx} non-2xx, ${a.errors} errors`,
      },
    ]
  }
  if ('failed' in r) {
    const p = r as { failed: number; ok: number; sent: number }
    return [
      {
        name: `${name}: every answer 200`,
        ok: p.failed === 0 && p.ok === p.sent,
        detail: `${p.ok} of ${p.sent} answered 200`,
      },
    ]
  }
  return []
}

type Pick = (r: ServerRuns) => number

/** A throughput row: the product against a baseline, with the least ratio it must reach. */
const rate = (
  name: string,
  of: Pick,
  base: ServerRuns,
  product: ServerRuns,
  least: number | null,
) =>
  row(
    name,
    of(product),
    'req/s',
    least === null ? '(none)' : `>= ${least.toFixed(1)}x plain`,
    least === null ? null : of(product) / of(base) >= least,
    of(base),
  )

/** A latency row: the product beside the plain baseline, with its ceiling if it has one. */
const latency = (
  name: string,
  of: Pick,
  plain: ServerRuns,
  product: ServerRuns,
  most: number | null,
) =>
  row(
    name,
    of(product),
    'ms',
    most === null ? '(none)' : `<= ${most} ms`,
    most === null ? null : of(product) <= most,
    of(plain),
  )

export function readRows(
  product: ServerRuns,
  plain: ServerRuns,
  bare: ServerRuns,
  r: number,
): Row[] {
  return [
    rate('lookups, uniform keys, most (vs plain)', (x) => x.uniform.reqPerS, plain, product, 1.5),
    rate('lookups, Zipf keys, most (vs plain)', (x) => x.zipf.reqPerS, plain, product, 1.5),
    rate('list pages, most (vs plain)', (x) => x.lists.reqPerS, plain, product, 1),
    rate('lookups, uniform, most (vs bare)', (x) => x.uniform.reqPerS, bare, product, null),
    latency(
      `lookups p50, paced ${r}/s (vs plain)`,
      (x) => x.lookupsPaced.p50,
      plain,
      product,
      null,
    ),
    latency(`lookups p99, paced ${r}/s (vs plain)`, (x) => x.lookupsPaced.p99, plain, product, 15),
    latency(`lists p99, paced ${r}/s (vs plain)`, (x) => x.listsPaced.p99, plain, product, 15),
    latency('lookups p99, most (vs plain)', (x) => x.uniform.p99, plain, product, null),
    latency('lists p99, most (vs plain)', (x) => x.lists.p99, plain, product, null),
  ]
}
