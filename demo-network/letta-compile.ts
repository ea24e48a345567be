// Letta's system prompt compile (letta-ai/letta-code, src/backend/local/
// system-prompt-compilation.ts; summarized in shared/notes/letta-compile.md), written again
// from its documented behaviour so the demo network's records are the ones Letta would write.

import { createHash } from 'node:crypto'

const CORE_MEMORY = '{CORE_MEMORY}'
// biome-ignore lint/suspicious/noTemplateCurlyInString: Letta writes this placeholder literally.
const MEMORY_DIR = '${MEMORY_DIR}'

/** One Markdown file of an agent's memory repository at HEAD, path relative to its root. */
export interface MemoryFile {
  path: string
  raw: string
}

export interface CompileInput {
  agentId: string
  /** The agent's `system` template. */
  system: string
  conversationId: string
  /** The memory directory's files at HEAD; empty when it has no commit. */
  files: readonly MemoryFile[]
  /** The memory directory's HEAD commit, absent when it has none. */
  memfsRevision?: string
  compiledAt: Date
  previousMessageCount: number
}

export interface CompiledPrompt {
  content: string
  coreMemory: string
  compiledAt: string
  rawSystemHash: string
  memfsRevision?: string
}

export function sha256Hex(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex')
}

export function compileSystemPrompt(input: CompileInput): CompiledPrompt {
  const projection = renderProjection(input.files)
  const metadata = renderMetadata(input)
  const coreMemory = [projection, metadata].filter((p) => p.trim().length > 0).join('\n\n')
  const template = input.system.includes(CORE_MEMORY)
    ? input.system
    : `${input.system.trimEnd()}\n\n${CORE_MEMORY}`
  return {
    content: template.split(CORE_MEMORY).join(coreMemory),
    coreMemory,
    compiledAt: input.compiledAt.toISOString(),
    rawSystemHash: sha256Hex(input.system),
    ...(input.memfsRevision === undefined ? {} : { memfsRevision: input.memfsRevision }),
  }
}

const pad2 = (n: number): string => String(n).padStart(2, '0')

/** `2026-12-06 03:04:05 PM UTC+0000`: UTC on a 12-hour clock. */
export function formatRecompiledAt(d: Date): string {
  const h = d.getUTCHours()
  const day = `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}`
  const time = `${pad2(h % 12 || 12)}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`
  return `${day} ${time} ${h < 12 ? 'AM' : 'PM'} UTC+0000`
}

function renderMetadata(input: CompileInput): string {
  return [
    '<memory_metadata>',
    `- AGENT_ID: ${input.agentId}`,
    `- CONVERSATION_ID: ${input.conversationId}`,
    `- System prompt last recompiled: ${formatRecompiledAt(input.compiledAt)}`,
    `- ${input.previousMessageCount} previous messages between you and the user are stored in recall memory`,
    '</memory_metadata>',
  ].join('\n')
}

interface ParsedFile {
  path: string
  label: string
  raw: string
  body: string
  description: string
}

/** A `---`-fenced frontmatter's `description`, and the body after the fence (trimmed). */
function parseFile(f: MemoryFile): ParsedFile {
  const label = f.path.replace(/\.md$/, '')
  const m = f.raw.startsWith('---\n') ? f.raw.indexOf('\n---\n', 3) : -1
  if (m <= 4) return { path: f.path, label, raw: f.raw, body: f.raw, description: '' }
  const front = f.raw.slice(4, m).split('\n')
  const desc = front.find((l) => l.startsWith('description:'))
  const body = f.raw.slice(m + 5)
  if (body.length === 0) return { path: f.path, label, raw: f.raw, body: f.raw, description: '' }
  const description = desc ? desc.slice('description:'.length).trim() : ''
  return { path: f.path, label, raw: f.raw, body: body.trim(), description }
}

function renderProjection(files: readonly MemoryFile[]): string {
  const md = files.filter((f) => f.path.endsWith('.md'))
  if (md.length === 0) return ''
  const parsed = md.map(parseFile).sort((a, b) => a.label.localeCompare(b.label))
  return md.some((f) => f.path === 'MEMORY.md') ? renderV2(parsed) : renderV1(parsed)
}

const escapeAttr = (v: string): string =>
  v
    .replaceAll('&', '&amp;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#x27;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')

/** A nested path is projected in memfs-v2 only when every directory above it has MEMORY.md. */
function projectedV2(path: string, all: ReadonlySet<string>): boolean {
  if (path === 'skills' || path.startsWith('skills/')) return false
  const dirs = path.split('/').slice(0, -1)
  return dirs.every((_, i) => all.has(`${dirs.slice(0, i + 1).join('/')}/MEMORY.md`))
}

function renderV2(files: ParsedFile[]): string {
  const all = new Set(files.map((f) => f.path))
  const byPath = (a: ParsedFile, b: ParsedFile) => a.path.localeCompare(b.path)
  const roots = files.filter((f) => !f.path.includes('/')).sort(byPath)
  const indexes = files
    .filter((f) => /^[^/]+\/MEMORY\.md$/.test(f.path) && projectedV2(f.path, all))
    .sort(byPath)
  const lines = [
    `<memory root="${MEMORY_DIR}">`,
    '<instructions>',
    'Root Markdown files are core memory and are already loaded below.',
    'A child directory is memory only when it contains MEMORY.md.',
    'Nested Markdown remains deferred. Read a child MEMORY.md before selecting deeper files.',
    'Directories without MEMORY.md remain silent. skills/ follows the Agent Skills format.',
    '</instructions>',
  ]
  for (const f of roots)
    lines.push(`<file name="${escapeAttr(f.path)}">`, f.raw.trimEnd(), '</file>')
  if (indexes.length > 0) {
    lines.push('<deferred-memory>')
    for (const f of indexes) {
      const dir = escapeAttr(f.path.slice(0, -'/MEMORY.md'.length))
      lines.push(`<directory path="${dir}/" index="${dir}/MEMORY.md" />`)
    }
    lines.push('</deferred-memory>')
  }
  lines.push('</memory>')
  return lines.join('\n')
}

function renderV1(files: ParsedFile[]): string {
  const lines = ['Reminder: <projection> contains the local path of the memory file projection.']
  const persona = files.find((f) => f.label === 'system/persona')
  if (persona) {
    lines.push('', '<self>', '<projection>$MEMORY_DIR/system/persona.md</projection>')
    lines.push(persona.body.trimEnd(), '</self>')
  }
  const system = files.filter((f) => f.label.startsWith('system/') && f !== persona)
  const external = files.filter(
    (f) => !f.label.startsWith('system/') && !f.label.startsWith('skills/'),
  )
  if (system.length > 0 || external.length > 0) {
    lines.push('', '<memory>')
    if (system.length > 0) lines.push(...renderSystemTree(system))
    if (external.length > 0) lines.push(...renderExternalTree(external))
    lines.push('</memory>')
  }
  return lines.join('\n')
}

interface TreeNode {
  children: Map<string, TreeNode>
  file?: ParsedFile
}

/** The node at `path` (slash-separated) under `root`, made on the way down. */
function insertPath(root: TreeNode, path: string): TreeNode {
  let node = root
  for (const part of path.split('/').filter(Boolean)) {
    const next = node.children.get(part) ?? { children: new Map() }
    node.children.set(part, next)
    node = next
  }
  return node
}

function renderSystemTree(files: ParsedFile[]): string[] {
  const root: TreeNode = { children: new Map() }
  for (const f of files) {
    insertPath(root, f.label.slice('system/'.length)).file = f
  }
  const lines: string[] = []
  const walk = (node: TreeNode, depth: number, path: string[]) => {
    const pad = '  '.repeat(depth)
    for (const key of [...node.children.keys()].sort((a, b) => a.localeCompare(b))) {
      const child = node.children.get(key)!
      const parts = [...path, key]
      lines.push(`${pad}<${key}>`)
      if (child.file) {
        lines.push(`${pad}  <projection>$MEMORY_DIR/system/${parts.join('/')}.md</projection>`)
        const description = child.file.description.trim()
        if (description) lines.push(`${pad}  <description>${description}</description>`)
        const value = child.file.body.trimEnd()
        if (value) lines.push(`${pad}  ${value}`)
      }
      walk(child, depth + 1, parts)
      lines.push(`${pad}</${key}>`)
    }
  }
  walk(root, 0, [])
  return lines
}

function renderExternalTree(files: ParsedFile[]): string[] {
  const root: TreeNode = { children: new Map() }
  for (const f of files) {
    insertPath(root, f.path)
  }
  const lines = ['<external_projection>', `${MEMORY_DIR}/`]
  const walk = (node: TreeNode, prefix: string) => {
    const isDir = (n: TreeNode) => n.children.size > 0
    const entries = [...node.children].sort(([a, an], [b, bn]) =>
      isDir(an) !== isDir(bn) ? (isDir(an) ? -1 : 1) : a.localeCompare(b),
    )
    entries.forEach(([name, child], i) => {
      const last = i === entries.length - 1
      lines.push(`${prefix}${last ? '└── ' : '├── '}${name}${isDir(child) ? '/' : ''}`)
      if (isDir(child)) walk(child, `${prefix}${last ? '    ' : '│   '}`)
    })
  }
  walk(root, '')
  lines.push('</external_projection>')
  return lines
}
