import { badRequest } from '../http-errors.ts'

// Query strings of UI pages. A parameter a page does not take is a 400 page naming it, so a
// mistyped shared link says what is wrong instead of showing an unfiltered list. Empty values
// count as absent, since a GET form sends every field; values are checked by the API's reads.

export type PageQuery = Record<string, string | undefined>

const shown = (s: string): string => (s.length > 64 ? `${s.slice(0, 64)}…` : s)

export function pageQuery(raw: unknown, allowed: readonly string[]): PageQuery {
  const out: PageQuery = {}
  const entries = raw && typeof raw === 'object' ? Object.entries(raw) : []
  for (const [key, value] of entries) {
    if (!allowed.includes(key)) {
      const takes = allowed.length
        ? `this page takes ${allowed.join(', ')}`
        : 'this page takes none'
      throw badRequest(`unknown parameter "${shown(key)}": ${takes}`)
    }
    if (typeof value !== 'string') throw badRequest(`parameter ${key} is given more than once`)
    if (value !== '') out[key] = value
  }
  return out
}

// Keyset pages only go forward, so the way back travels in the link: `prev` is a bounded
// stack of earlier cursors (FIRST for the first page), newest last.
const FIRST = '~'
const MAX_TRAIL = 25
const CURSOR = /^[A-Za-z0-9_-]{1,2048}$/

export function parseTrail(value: string | undefined): string[] {
  if (value === undefined) return []
  const steps = value.split('.')
  if (steps.length > MAX_TRAIL || !steps.every((s) => s === FIRST || CURSOR.test(s)))
    throw badRequest('prev is malformed: use the Previous and Next links as they are')
  return steps
}

export interface PageLinks {
  /** Query of the next page, when there is one. */
  next: { cursor: string; prev: string } | null
  /** Query of the previous page, when this is not the first. */
  previous: { cursor?: string; prev?: string } | null
}

export function pageLinks(
  trail: string[],
  cursor: string | undefined,
  nextCursor: string | undefined,
): PageLinks {
  const here = cursor ?? FIRST
  const next = nextCursor
    ? { cursor: nextCursor, prev: [...trail, here].slice(-MAX_TRAIL).join('.') }
    : null
  if (cursor === undefined) return { next, previous: null }
  const before = trail.at(-1)
  const rest = trail.slice(0, -1)
  const previous = {
    cursor: before === undefined || before === FIRST ? undefined : before,
    prev: rest.length ? rest.join('.') : undefined,
  }
  return { next, previous }
}
