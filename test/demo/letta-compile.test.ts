import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { compileSystemPrompt, formatRecompiledAt } from '../../demo-network/letta-compile.ts'

// The expected strings are written out by hand from shared/notes/letta-compile.md, not
// produced by the module: a byte that differs from Letta's algorithm fails here.

const AGENT = 'agent-3f2a9c1e-7b4d-4e8a-9f10-2c5d6e7f8a9b'
const CONV = 'conv-0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d'
const REV = '9d3c0ffee0123456789abcdef0123456789abcde'
const AT = new Date('2026-12-06T15:04:05.678Z')
// Letta writes this placeholder literally.
const DIR = ['$', '{MEMORY_DIR}'].join('')
const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex')

const METADATA = [
  '<memory_metadata>',
  `- AGENT_ID: ${AGENT}`,
  `- CONVERSATION_ID: ${CONV}`,
  '- System prompt last recompiled: 2026-12-06 03:04:05 PM UTC+0000',
  '- 12 previous messages between you and the user are stored in recall memory',
  '</memory_metadata>',
].join('\n')

describe('Letta compile', () => {
  it('formats the recompile time on a 12-hour UTC clock', () => {
    expect(formatRecompiledAt(new Date('2026-01-02T00:07:08Z'))).toBe(
      '2026-01-02 12:07:08 AM UTC+0000',
    )
    expect(formatRecompiledAt(new Date('2026-01-02T12:00:00Z'))).toBe(
      '2026-01-02 12:00:00 PM UTC+0000',
    )
    expect(formatRecompiledAt(new Date('2026-11-30T09:59:59Z'))).toBe(
      '2026-11-30 09:59:59 AM UTC+0000',
    )
  })

  it('compiles memfs-v2 into a template with {CORE_MEMORY}, byte for byte', () => {
    const system =
      'You are Ada.\n<base_instructions>\nBe brief.\n</base_instructions>\n\n{CORE_MEMORY}\n\nEnd.'
    const out = compileSystemPrompt({
      agentId: AGENT,
      system,
      conversationId: CONV,
      files: [
        { path: 'persona.md', raw: '---\ndescription: who I am\n---\nI am Ada.\n\n' },
        { path: 'MEMORY.md', raw: '# Index\n- persona.md' },
        { path: 'human.md', raw: 'Name: Sam & co' },
        { path: 'projects/MEMORY.md', raw: 'projects' },
        { path: 'projects/alpha.md', raw: 'deferred' },
        { path: 'notes/a.md', raw: 'silent' },
        { path: 'skills/MEMORY.md', raw: 'skills' },
      ],
      memfsRevision: REV,
      compiledAt: AT,
      previousMessageCount: 12,
    })
    const memory = [
      `<memory root="${DIR}">`,
      '<instructions>',
      'Root Markdown files are core memory and are already loaded below.',
      'A child directory is memory only when it contains MEMORY.md.',
      'Nested Markdown remains deferred. Read a child MEMORY.md before selecting deeper files.',
      'Directories without MEMORY.md remain silent. skills/ follows the Agent Skills format.',
      '</instructions>',
      '<file name="human.md">',
      'Name: Sam & co',
      '</file>',
      '<file name="MEMORY.md">',
      '# Index\n- persona.md',
      '</file>',
      '<file name="persona.md">',
      '---\ndescription: who I am\n---\nI am Ada.',
      '</file>',
      '<deferred-memory>',
      '<directory path="projects/" index="projects/MEMORY.md" />',
      '</deferred-memory>',
      '</memory>',
    ].join('\n')
    const coreMemory = `${memory}\n\n${METADATA}`
    expect(out).toEqual({
      content: `You are Ada.\n<base_instructions>\nBe brief.\n</base_instructions>\n\n${coreMemory}\n\nEnd.`,
      coreMemory,
      compiledAt: '2026-12-06T15:04:05.678Z',
      rawSystemHash: sha(system),
      memfsRevision: REV,
    })
  })

  it('compiles memfs-v1 into a template without {CORE_MEMORY}, byte for byte', () => {
    const system = 'You are Basil, a helpful agent.\n\n\n'
    const out = compileSystemPrompt({
      agentId: AGENT,
      system,
      conversationId: CONV,
      files: [
        { path: 'system/persona.md', raw: '---\ndescription: self\n---\nI am Basil.\n' },
        { path: 'system/human.md', raw: '---\ndescription: The user\n---\nSam likes tea.' },
        { path: 'system/projects/alpha.md', raw: 'Ship it.' },
        { path: 'notes/b.md', raw: 'x' },
        { path: 'a.md', raw: 'y' },
        { path: 'skills/s.md', raw: 'z' },
      ],
      memfsRevision: REV,
      compiledAt: AT,
      previousMessageCount: 12,
    })
    const memory = [
      'Reminder: <projection> contains the local path of the memory file projection.',
      '',
      '<self>',
      '<projection>$MEMORY_DIR/system/persona.md</projection>',
      'I am Basil.',
      '</self>',
      '',
      '<memory>',
      '<human>',
      '  <projection>$MEMORY_DIR/system/human.md</projection>',
      '  <description>The user</description>',
      '  Sam likes tea.',
      '</human>',
      '<projects>',
      '  <alpha>',
      '    <projection>$MEMORY_DIR/system/projects/alpha.md</projection>',
      '    Ship it.',
      '  </alpha>',
      '</projects>',
      '<external_projection>',
      `${DIR}/`,
      '├── notes/',
      '│   └── b.md',
      '└── a.md',
      '</external_projection>',
      '</memory>',
    ].join('\n')
    const coreMemory = `${memory}\n\n${METADATA}`
    expect(out.coreMemory).toBe(coreMemory)
    expect(out.content).toBe(`You are Basil, a helpful agent.\n\n${coreMemory}`)
    expect(out.rawSystemHash).toBe(sha(system))
  })

  it('is the metadata block alone when the memory directory has no commit', () => {
    const out = compileSystemPrompt({
      agentId: AGENT,
      system: 'Hi {CORE_MEMORY} and again {CORE_MEMORY}',
      conversationId: CONV,
      files: [],
      compiledAt: AT,
      previousMessageCount: 12,
    })
    expect(out.coreMemory).toBe(METADATA)
    expect(out.content).toBe(`Hi ${METADATA} and again ${METADATA}`)
    expect('memfsRevision' in out).toBe(false)
  })
})
