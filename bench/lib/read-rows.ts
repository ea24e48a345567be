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

export function readRows(
  product: ServerRuns,
  plain: ServerRuns,
  bare: ServerRuns,
  rate: number,
): Row[] {
  const ratio = (a: number, b: number) => a / b
  const atLeast = (value: number, base: number, x: number) => ratio(value, base) >= x
  return [
    row(
      'lookups, uniform keys, most (vs plain)',
      product.uniform.reqPerS,
      'req/s',
      '>= 1.5x plain',
      atLeast(product.uniform.reqPerS, plain.uniform.reqPerS, 1.5),
      plain.uniform.reqPerS,
    ),
    row(
      'lookups, Zipf keys, most (vs plain)',
      product.zipf.reqPerS,
      'req/s',
      '>= 1.5x plain',
      atLeast(product.zipf.reqPerS, plain.zipf.reqPerS, 1.5),
      plain.zipf.reqPerS,
    ),
    row(
      'list pages, most (vs plain)',
      product.lists.reqPerS,
      'req/s',
      '>= 1.0x plain',
      atLeast(product.lists.reqPerS, plain.lists.reqPerS, 1),
      plain.lists.reqPerS,
    ),
    row(
      'lookups, uniform, most (vs bare)',
      product.uniform.reqPerS,
      'req/s',
      '(none)',
      null,
      bare.uniform.reqPerS,
    ),
    row(
      `lookups p50, paced ${rate}/s (vs plain)`,
      product.lookupsPaced.p50,
      'ms',
      '(none)',
      null,
      plain.lookupsPaced.p50,
    ),
    row(
      `lookups p99, paced ${rate}/s (vs plain)`,
      product.lookupsPaced.p99,
      'ms',
      '<= 15 ms',
      product.lookupsPaced.p99 <= 15,
      plain.lookupsPaced.p99,
    ),
    row(
      `lists p99, paced ${rate}/s (vs plain)`,
      product.listsPaced.p99,
      'ms',
      '<= 15 ms',
      product.listsPaced.p99 <= 15,
      plain.listsPaced.p99,
    ),
    row(
      'lookups p99, most (vs plain)',
      product.uniform.p99,
      'ms',
      '(none)',
      null,
      plain.uniform.p99,
    ),
    row('lists p99, most (vs plain)', product.lists.p99, 'ms', '(none)', null, plain.lists.p99),
  ]
}
