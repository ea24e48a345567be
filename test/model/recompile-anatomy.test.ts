import { describe, expect, it } from 'vitest'
import {
  type CompileInput,
  compileSystemPrompt,
  type MemoryFile,
} from '../../demo-network/letta-compile.ts'
import {
  lettaParts,
  memoryBlocks,
  type PromptVersion,
  recompileAnatomy,
} from '../../src/model/recompile-anatomy.ts'

// Revisions compiled by Letta's algorithm (demo-network/letta-compile.ts), then the bad
// inputs SPEC section 14 names: each falls back, none throws.

const T0 = new Date('2026-12-06T15:04:05.678Z')
const T1 = new Date('2026-12-06T21:30:00.000Z')
const REV_A = 'a'.repeat(40)
const REV_B = 'b'.repeat(40)
const SYSTEM = 'You are Cleo.\n<base_instructions>\nBe kind.\n</base_instructions>\n\n{CORE_MEMORY}'

const V2: MemoryFile[] = [
  { path: 'MEMORY.md', raw: '# Memory\n- persona.md\n- human.md' },
  { path: 'persona.md', raw: '---\ndescription: self\n---\nI am Cleo.' },
  { path: 'human.md', raw: 'The user is Sam.' },
]
const V1: MemoryFile[] = [
  { path: 'system/persona.md', raw: 'I am Cleo.' },
  { path: 'system/human.md', raw: '---\ndescription: user\n---\nThe user is Sam.' },
  { path: 'system/projects/alpha.md', raw: 'Alpha ships Friday.' },
]

function version(over: Partial<CompileInput> = {}): PromptVersion {
  const c = compileSystemPrompt({
    agentId: 'agent-1',
    system: SYSTEM,
    conversationId: 'conv-1',
    files: V2,
    memfsRevision: REV_A,
    compiledAt: T0,
    previousMessageCount: 3,
    ...over,
  })
  return { ...c, memfsRevision: c.memfsRevision ?? null }
}

const edit = (files: MemoryFile[], path: string, raw: string) =>
  files.map((f) => (f.path === path ? { path, raw } : f))

describe('recompile anatomy on Letta-compiled revisions', () => {
  it('a metadata-only recompile (new time, new message count) is metadata alone', () => {
    const later = version({ compiledAt: T1, previousMessageCount: 9 })
    expect(recompileAnatomy(version(), later)).toEqual({ changed: ['metadata'], memoryFiles: [] })
  })

  it('a template change is template, whatever else stays', () => {
    const cur = version({ system: `${SYSTEM}\nNever lie.`, compiledAt: T1 })
    expect(recompileAnatomy(version(), cur)).toEqual({ changed: ['template'], memoryFiles: [] })
  })

  it('a memfs-v2 commit names the root file whose block changed', () => {
    const files = edit(V2, 'human.md', 'The user is Sam. Sam likes tea.')
    const cur = version({ files, memfsRevision: REV_B, compiledAt: T1 })
    expect(recompileAnatomy(version(), cur)).toEqual({
      changed: ['memory'],
      memoryFiles: ['human.md'],
    })
  })

  it('a memfs-v1 commit names element paths, nested ones with slashes', () => {
    const prev = version({ files: V1 })
    const files = edit(
      edit(V1, 'system/projects/alpha.md', 'Alpha slips.'),
      'system/persona.md',
      'I am Cleo, tired.',
    )
    const cur = version({ files, memfsRevision: REV_B, compiledAt: T1 })
    expect(recompileAnatomy(prev, cur)).toEqual({
      changed: ['memory'],
      memoryFiles: ['persona', 'projects/alpha'],
    })
  })

  it('a file added or removed is named; template and memory come together', () => {
    const files = [...V2, { path: 'notes.md', raw: 'New notes.' }]
    const cur = version({ files, memfsRevision: REV_B, system: 'Short {CORE_MEMORY}' })
    expect(recompileAnatomy(version(), cur)).toEqual({
      changed: ['template', 'memory'],
      memoryFiles: ['notes.md'],
    })
    expect(recompileAnatomy(cur, version()).memoryFiles).toEqual(['notes.md'])
  })

  it('a new revision with only memfsRevision moved is memory, with no file named', () => {
    const cur = version({ memfsRevision: REV_B })
    expect(recompileAnatomy(version(), cur)).toEqual({ changed: ['memory'], memoryFiles: [] })
  })

  it('a template edit under the same hash is other', () => {
    const prev = version()
    const cur = { ...prev, content: prev.content!.replace('Be kind.', 'Be unkind.') }
    expect(recompileAnatomy(prev, cur).changed).toEqual(['other'])
  })

  it('compares hashes normalised, as SPEC section 3 does', () => {
    const prev = version()
    const cur = {
      ...version({ compiledAt: T1 }),
      rawSystemHash: `SHA256:${prev.rawSystemHash!.toUpperCase()}`,
    }
    expect(recompileAnatomy(prev, cur).changed).toEqual(['metadata'])
  })

  it('cuts a Letta revision into template, memory and metadata', () => {
    const v = version({ files: [], memfsRevision: undefined })
    const parts = lettaParts(v.content, v.coreMemory)
    expect(parts?.memory).toBe('')
    expect(parts?.template).toBe(SYSTEM)
    expect(parts?.metadata.startsWith('<memory_metadata>\n- AGENT_ID: agent-1\n')).toBe(true)
  })
})

describe('recompile anatomy on input not in Letta format', () => {
  const prev = version()
  const meta = prev.coreMemory!.slice(prev.coreMemory!.indexOf('<memory_metadata>'))
  const projection = prev.coreMemory!.slice(0, prev.coreMemory!.indexOf('<memory_metadata>') - 2)
  const withCore = (coreMemory: string, extra = ''): PromptVersion => ({
    ...prev,
    content: `Prompt.\n\n${coreMemory}${extra}`,
    coreMemory,
  })

  it('no metadata block: plain rules, other when only the text changed', () => {
    const a = withCore('plain memory one')
    const b = withCore('plain memory two')
    expect(lettaParts(a.content, a.coreMemory)).toBeNull()
    expect(recompileAnatomy(a, b)).toEqual({ changed: ['other'], memoryFiles: [] })
    expect(recompileAnatomy(a, { ...b, memfsRevision: REV_B }).changed).toEqual(['memory'])
    expect(recompileAnatomy(a, { ...b, rawSystemHash: 'f'.repeat(64) }).changed).toEqual([
      'template',
    ])
  })

  it('two metadata blocks, or a malformed one, is not Letta format', () => {
    for (const core of [
      `${meta}\n\n${meta}`,
      `${projection}\n\n${meta.replace('- AGENT_ID', 'AGENT_ID')}`,
      `${projection}\n\n<memory_metadata>\n</memory_metadata>`,
      `${projection}\n${meta}`,
      `${projection}\n\n${meta}\n`,
      `${projection}\n\n${meta.replace('</memory_metadata>', '')}</memory_metadata></memory_metadata>`,
    ]) {
      expect(lettaParts(`x ${core}`, core)).toBeNull()
      expect(recompileAnatomy(withCore(core), withCore(core, ' edited')).changed).toEqual(['other'])
    }
  })

  it('content without its coreMemory (detached) is not Letta format', () => {
    const detached = { ...prev, content: 'Prompt without memory.' }
    expect(lettaParts(detached.content, detached.coreMemory)).toBeNull()
    expect(recompileAnatomy(prev, detached).changed).toEqual(['other'])
  })

  it('an unclosed <file> or duplicate names: memory changed, no file named', () => {
    const unclosed = projection.replace(
      '</file>\n<file name="MEMORY.md">',
      '\n<file name="MEMORY.md">',
    )
    expect(memoryBlocks(unclosed)).toBeNull()
    const dup = projection.replace('<file name="human.md">', '<file name="persona.md">')
    expect(memoryBlocks(dup)).toBeNull()
    for (const bad of [unclosed, dup]) {
      const r = recompileAnatomy(prev, withCore(`${bad}\n\n${meta}`))
      expect(r).toEqual({ changed: ['memory', 'other'], memoryFiles: [] })
    }
  })

  it('memfs-v1 with duplicate projections or an unclosed <self> names no file', () => {
    const v1 = version({ files: V1 }).coreMemory!
    const p1 = v1.slice(0, v1.indexOf('<memory_metadata>') - 2)
    expect(memoryBlocks(p1.replace('system/human.md', 'system/persona.md'))).toBeNull()
    expect(memoryBlocks(p1.replace('</self>', ''))).toBeNull()
    expect(memoryBlocks(p1.slice(0, -'</memory>'.length))).toBeNull()
    expect(memoryBlocks('Some other projection')).toBeNull()
  })

  it('200 KB of one line, in any field, falls back without throwing', () => {
    const line = `<file name="${'a'.repeat(200_000)}`
    const tags = `<${'b'.repeat(200_000)}`
    for (const blob of [
      line,
      tags,
      'x'.repeat(200_000),
      `<memory_metadata>${'-'.repeat(200_000)}`,
    ]) {
      const v: PromptVersion = { ...prev, content: blob, coreMemory: blob }
      expect(recompileAnatomy(prev, v).changed).toEqual(['other'])
      expect(memoryBlocks(blob)).toBeNull()
      const inLetta = withCore(`${blob}\n\n${meta}`)
      // A second metadata block makes the whole revision not Letta's format.
      const twoBlocks = blob.includes('<memory_metadata>')
      expect(recompileAnatomy(prev, inLetta)).toEqual({
        changed: twoBlocks ? ['other'] : ['memory', 'other'],
        memoryFiles: [],
      })
    }
    const v1Like = `Reminder: <projection> contains the local path of the memory file projection.\n${tags}`
    expect(memoryBlocks(v1Like)).toEqual(new Map())
  })

  it('missing fields are compared as absent, never an error', () => {
    const empty: PromptVersion = {
      content: null,
      coreMemory: null,
      rawSystemHash: null,
      memfsRevision: null,
    }
    expect(recompileAnatomy(empty, empty).changed).toEqual(['other'])
    expect(recompileAnatomy(empty, prev).changed).toEqual(['template', 'memory'])
  })
})
