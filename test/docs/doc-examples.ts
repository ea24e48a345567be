import { readFileSync } from 'node:fs'

// The examples of the user documentation, read from its Markdown: shell blocks of `$ command`
// lines each followed by the output it shows, and SQL blocks followed by the DuckDB result
// table they show. The test runs them; this compares what they printed with what is shown,
// in shape (keys and value types, column names and types) and, since the sample replay is the
// same every run, in value too, but for the clock's and the change feed's positions.

export type Mode = 'server' | 'server stopped' | 'skip'

export interface ShellCommand {
  line: number
  command: string
  expected: string[]
}

export interface ShellBlock {
  kind: 'sh'
  file: string
  line: number
  mode: Mode
  reason: string | null
  commands: ShellCommand[]
}

export interface SqlBlock {
  kind: 'sql'
  file: string
  line: number
  sql: string
  /** Column names and types of the result table shown after the query. */
  columns: Array<{ name: string; type: string }>
}

const MARKER = /^<!-- doc-test: (server stopped|skip \((.+)\)) -->$/

/** The fenced blocks of one Markdown file with the marker on the line before each. */
function fences(
  text: string,
): Array<{ lang: string; line: number; body: string[]; marker: string }> {
  const lines = text.split('\n')
  const out: Array<{ lang: string; line: number; body: string[]; marker: string }> = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)$/.exec(lines[i])
    if (!open) continue
    const end = lines.indexOf('```', i + 1)
    if (end < 0) throw new Error(`line ${i + 1}: a code block that never ends`)
    out.push({
      lang: open[1],
      line: i + 1,
      body: lines.slice(i + 1, end),
      marker: lines[i - 1] ?? '',
    })
    i = end
  }
  return out
}

function shellBlock(file: string, f: { line: number; body: string[]; marker: string }): ShellBlock {
  const m = MARKER.exec(f.marker)
  const mode: Mode = m === null ? 'server' : m[1] === 'server stopped' ? 'server stopped' : 'skip'
  const commands: ShellCommand[] = []
  f.body.forEach((text, k) => {
    if (text.startsWith('$ '))
      commands.push({ line: f.line + 1 + k, command: text.slice(2), expected: [] })
    else if (commands.length > 0 && text !== '') commands.at(-1)?.expected.push(text)
  })
  return { kind: 'sh', file, line: f.line, mode, reason: m?.[2] ?? null, commands }
}

/** The `│ name │ ... │` and `│ type │ ... │` lines of a DuckDB box. */
function boxColumns(body: string[]): Array<{ name: string; type: string }> {
  const rows = body
    .filter((l) => l.startsWith('│'))
    .map((l) =>
      l
        .split('│')
        .slice(1, -1)
        .map((c) => c.trim()),
    )
  const [names, types] = rows
  if (!names || !types) return []
  return names.map((name, i) => ({ name, type: types[i] ?? '' }))
}

export function readExamples(path: string, file: string): Array<ShellBlock | SqlBlock> {
  const blocks = fences(readFileSync(path, 'utf8'))
  const out: Array<ShellBlock | SqlBlock> = []
  blocks.forEach((f, i) => {
    if (f.lang === 'sh') out.push(shellBlock(file, f))
    if (f.lang === 'sql') {
      const result = blocks[i + 1]?.lang === 'text' ? blocks[i + 1].body : []
      out.push({
        kind: 'sql',
        file,
        line: f.line,
        sql: f.body.join('\n'),
        columns: boxColumns(result),
      })
    }
  })
  return out
}

/** Keys whose object value is the record's own data or keyed by data: only its type counts. */
const FREE_FORM = new Set(['record', 'reasons'])

const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v)

/** A value that depends on when the example ran: a timestamp, or a lag in (fractional) seconds. */
const ofTheClock = (v: unknown) =>
  (typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v)) ||
  (typeof v === 'number' && !Number.isInteger(v))

/** Positions in the change feed, which depend on how the run batched its writes. */
const OF_THE_RUN = new Set(['seq', 'cursor'])

/**
 * Where `actual` differs from `expected` in shape, or, with `values`, in a value that depends
 * neither on the clock nor on the run's batching; null matches any type.
 */
export function jsonDiff(expected: unknown, actual: unknown, path = '$', values = true): string[] {
  const [te, ta] = [typeOf(expected), typeOf(actual)]
  if (te === 'null' || ta === 'null') return []
  if (te !== ta) return [`${path}: shown as ${te}, got ${ta}`]
  if (values && te !== 'object' && te !== 'array' && expected !== actual && !ofTheClock(expected))
    return [`${path}: shown ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`]
  if (te === 'array') {
    const [e, a] = [expected as unknown[], actual as unknown[]]
    if (!values)
      return e.length > 0 && a.length > 0 ? jsonDiff(e[0], a[0], `${path}[0]`, false) : []
    if (e.length !== a.length) return [`${path}: shown with ${e.length} item(s), got ${a.length}`]
    return e.flatMap((x, i) => jsonDiff(x, a[i], `${path}[${i}]`))
  }
  if (te !== 'object' || FREE_FORM.has(path.split('.').at(-1) ?? '')) return []
  const [e, a] = [expected as Record<string, unknown>, actual as Record<string, unknown>]
  // Which records a change row names depends on the batching too: it is compared in shape.
  const inner = values && !('seq' in e)
  const out: string[] = []
  for (const k of Object.keys(e))
    if (!(k in a)) out.push(`${path}.${k}: shown, missing from the output`)
    else out.push(...jsonDiff(e[k], a[k], `${path}.${k}`, inner && !OF_THE_RUN.has(k)))
  for (const k of Object.keys(a)) if (!(k in e)) out.push(`${path}.${k}: in the output, not shown`)
  return out
}

const parse = (line: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(line) }
  } catch {
    return { ok: false }
  }
}

/** Text with every number made alike, for output lines that are not JSON. */
const numbersAlike = (s: string) => s.replace(/\d+(\.\d+)?/g, '0').trim()

/** Where a command's output differs from the one shown; a shown `…` line ends the comparison. */
export function outputDiff(expected: string[], actual: string[]): string[] {
  const cut = expected.indexOf('…')
  const shown = cut < 0 ? expected : expected.slice(0, cut)
  if (cut < 0 && actual.length !== shown.length)
    return [`shows ${shown.length} line(s), printed ${actual.length}:\n${actual.join('\n')}`]
  if (actual.length < shown.length)
    return [`shows ${shown.length} line(s), printed ${actual.length}`]
  return shown.flatMap((e, i) => {
    const [pe, pa] = [parse(e), parse(actual[i])]
    if (pe.ok) {
      if (!pa.ok) return [`output line ${i + 1} is not JSON: ${actual[i]}`]
      return jsonDiff(pe.value, pa.value).map((d) => `output line ${i + 1}: ${d}`)
    }
    return numbersAlike(e) === numbersAlike(actual[i])
      ? []
      : [`output line ${i + 1}: shown ${JSON.stringify(e)}, printed ${JSON.stringify(actual[i])}`]
  })
}

/** DuckDB's type names as its box shows them. */
export const boxType = (t: string): string =>
  ({ BIGINT: 'int64', INTEGER: 'int32', HUGEINT: 'int128', SMALLINT: 'int16' })[t] ??
  t.toLowerCase()
