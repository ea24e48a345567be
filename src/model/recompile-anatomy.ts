import { normalizeHash } from './flags.ts'

// What changed between two revisions of a compiled prompt (SPEC section 14): the template,
// the memory (and which memory files), only Letta's per-compile metadata block, or
// something else. Everything here is line splitting, indexOf and whole-string comparison,
// so an adversarial record costs linear time, and no input throws: what cannot be read as
// Letta's format falls back to the plain rules.

export const RECOMPILE_KINDS = ['template', 'memory', 'metadata', 'other'] as const
export type RecompileKind = (typeof RECOMPILE_KINDS)[number]

/** The fields of one revision the anatomy reads; null when the record lacks them. */
export interface PromptVersion {
  content: string | null
  coreMemory: string | null
  rawSystemHash: string | null
  memfsRevision: string | null
}

export interface Anatomy {
  changed: RecompileKind[]
  /** Memory files whose blocks differ (memfs-v2 file names, memfs-v1 element paths). */
  memoryFiles: string[]
}

/** The oldest revision held: nothing to compare with. */
export const FIRST_REVISION: Anatomy = { changed: [], memoryFiles: [] }

const OPEN = '<memory_metadata>'
const CLOSE = '</memory_metadata>'
const PLACEHOLDER = '{CORE_MEMORY}'
const REMINDER = 'Reminder: <projection> contains the local path of the memory file projection.'
const PROJECTION_HEAD = '<projection>$MEMORY_DIR/system/'
const PROJECTION_TAIL = '.md</projection>'
/** A line that is one element tag and nothing else (the v1 tree's open and close lines). */
const TAG_LINE = /^ *<\/?[A-Za-z0-9_.-]+>$/

/** A revision in Letta's format, cut into its three parts. */
export interface LettaParts {
  /** content with each copy of coreMemory put back as `{CORE_MEMORY}` */
  template: string
  /** the memfs projection: coreMemory before its metadata block ('' when there is none) */
  memory: string
  metadata: string
}

/**
 * The parts of a revision in Letta's format (coreMemory ends with exactly one well-formed
 * metadata block, and content contains coreMemory), or null.
 */
export function lettaParts(content: string | null, coreMemory: string | null): LettaParts | null {
  if (content === null || coreMemory === null || !coreMemory.endsWith(CLOSE)) return null
  const open = coreMemory.indexOf(OPEN)
  if (open < 0 || open !== coreMemory.lastIndexOf(OPEN)) return null
  if (coreMemory.indexOf(CLOSE) !== coreMemory.length - CLOSE.length) return null
  if (open !== 0 && !coreMemory.startsWith('\n\n', open - 2)) return null
  const metadata = coreMemory.slice(open)
  const lines = metadata.split('\n')
  if (lines.length < 3 || lines[0] !== OPEN || lines[lines.length - 1] !== CLOSE) return null
  for (let i = 1; i < lines.length - 1; i++) if (!lines[i].startsWith('- ')) return null
  if (!content.includes(coreMemory)) return null
  return {
    template: content.split(coreMemory).join(PLACEHOLDER),
    memory: open === 0 ? '' : coreMemory.slice(0, open - 2),
    metadata,
  }
}

/**
 * What changed from `prev` to `cur`, two distinct revisions of one prompt. Something always
 * did (the caller compares revisions of different CIDs): what differs outside the fields
 * compared here (compiledAt, conversation, ...) is `other`.
 */
export function recompileAnatomy(prev: PromptVersion, cur: PromptVersion): Anatomy {
  const hash = (v: PromptVersion) =>
    v.rawSystemHash === null ? null : normalizeHash(v.rawSystemHash)
  const template = hash(prev) !== hash(cur)
  const memfs = prev.memfsRevision !== cur.memfsRevision
  const p = lettaParts(prev.content, prev.coreMemory)
  const c = lettaParts(cur.content, cur.coreMemory)
  const found: Partial<Record<RecompileKind, boolean>> = { template, memory: memfs }
  if (p && c) {
    // SPEC 14's table, for two revisions both in Letta's format.
    found.memory ||= p.memory !== c.memory
    // A template part that differs under the same hash is no template change Letta made.
    found.other = !template && p.template !== c.template
    found.metadata = !template && !found.memory && !found.other && p.metadata !== c.metadata
  }
  const changed = RECOMPILE_KINDS.filter((k) => found[k] === true)
  const memoryFiles = p && c && found.memory ? changedFiles(p.memory, c.memory) : []
  return { changed: changed.length > 0 ? changed : ['other'], memoryFiles }
}

/** Names whose blocks differ between two projections; none when either cannot be read. */
function changedFiles(prev: string, cur: string): string[] {
  const a = memoryBlocks(prev)
  const b = memoryBlocks(cur)
  if (!a || !b) return []
  const names = new Set([...a.keys(), ...b.keys()])
  return [...names].filter((n) => a.get(n) !== b.get(n)).sort()
}

/** A projection's blocks by memory file name, or null when it is not in Letta's format. */
export function memoryBlocks(projection: string): Map<string, string> | null {
  if (projection === '') return new Map()
  const lines = projection.split('\n')
  if (lines[0].startsWith('<memory root="')) return v2Blocks(lines)
  if (lines[0] === REMINDER) return v1Blocks(lines)
  return null
}

const unescapeAttr = (v: string): string =>
  v
    .replaceAll('&quot;', '"')
    .replaceAll('&#x27;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&')

/** memfs-v2: one `<file name="...">` ... `</file>` block per root Markdown file. */
function v2Blocks(lines: string[]): Map<string, string> | null {
  if (lines[lines.length - 1] !== '</memory>') return null
  const blocks = new Map<string, string>()
  let name: string | null = null
  let start = 0
  for (let i = 1; i < lines.length - 1; i++) {
    const opened = fileOpened(lines[i])
    if (opened !== undefined) {
      // A file opened inside another, unnamed, or named twice: not Letta's projection.
      if (name !== null || opened === null || blocks.has(opened)) return null
      name = opened
      start = i + 1
    } else if (lines[i] === '</file>') {
      if (name === null) return null
      blocks.set(name, lines.slice(start, i).join('\n'))
      name = null
    }
  }
  return name === null ? blocks : null
}

/** The name a `<file name="...">` line opens; null when it is malformed; else undefined. */
function fileOpened(line: string): string | null | undefined {
  if (!line.startsWith('<file name="') || !line.endsWith('">')) return undefined
  const raw = line.slice('<file name="'.length, -2)
  return raw.includes('"') ? null : unescapeAttr(raw)
}

/** The file a memfs-v1 `<projection>` line names (`persona`, `projects/alpha`), or null. */
function projectionName(line: string): string | null {
  const t = line.trimStart()
  if (!t.startsWith(PROJECTION_HEAD) || !t.endsWith(PROJECTION_TAIL)) return null
  const name = t.slice(PROJECTION_HEAD.length, t.length - PROJECTION_TAIL.length)
  return name.length > 0 ? name : null
}

/**
 * memfs-v1: a file's block runs from its `<projection>` line to the next file's, without
 * the element tags and blank lines around it (those belong to the tree, not the file).
 */
function v1Blocks(lines: string[]): Map<string, string> | null {
  const has = (l: string) => lines.includes(l)
  if (has('<self>') !== has('</self>')) return null
  if (has('<memory>') && lines[lines.length - 1] !== '</memory>') return null
  const blocks = new Map<string, string>()
  let name: string | null = null
  let start = 0
  const close = (end: number) => {
    let e = end
    while (e > start && (lines[e - 1].trim() === '' || TAG_LINE.test(lines[e - 1]))) e--
    if (name !== null) blocks.set(name, lines.slice(start, e).join('\n'))
    name = null
  }
  for (let i = 1; i < lines.length; i++) {
    const next = projectionName(lines[i])
    if (next !== null) {
      close(i)
      if (blocks.has(next)) return null
      name = next
      start = i
    } else if (lines[i] === '</self>' || lines[i] === '<external_projection>') {
      close(i)
    }
  }
  close(lines.length)
  return blocks
}
