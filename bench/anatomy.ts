import {
  type Anatomy,
  type PromptVersion,
  recompileAnatomy,
} from '../src/model/recompile-anatomy.ts'
import { count } from './lib/env.ts'
import { row, type ScenarioResult } from './lib/report.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { scenarioResult, startScenario } from './lib/scenario-run.ts'

// The recompile anatomy on adversarial input (SPEC 14): what a hostile or broken record can
// make the indexer do when it compares two versions of a prompt. Each case is a pair of
// versions of about `bytes` characters, built to hit one parser path at its worst (a single
// 200 KB line, thousands of unclosed or duplicated <file> blocks, metadata openings
// everywhere, a core memory that almost matches the content everywhere); each must answer
// the expected kinds, never throw, take at most a bound, and take about twice as long on
// twice the input (linear, not quadratic).

export interface AnatomyOptions {
  /** Characters of each version's core memory. */
  bytes: number
  /** Timed runs per case; the median is reported. */
  repeats: number
}

export function anatomyOptionsFromEnv(): AnatomyOptions {
  return {
    bytes: count('BENCH_ANATOMY_BYTES', 200_000),
    repeats: count('BENCH_ANATOMY_REPEATS', 9),
  }
}

const META = (n: number) =>
  `<memory_metadata>\n- AGENT_ID: agent-1\n- CONVERSATION_ID: conv-1\n- System prompt last recompiled: ${n}\n- ${n} previous messages\n</memory_metadata>`
const REV = (c: string) => c.repeat(40)
const HASH = 'a'.repeat(64)

/** A version whose content is `template` with the core memory in place of the placeholder. */
const version = (coreMemory: string, memfs = REV('a'), template = 'T\n{CORE_MEMORY}') => ({
  content: template.split('{CORE_MEMORY}').join(coreMemory),
  coreMemory,
  rawSystemHash: HASH,
  memfsRevision: memfs,
})

const fill = (unit: string, bytes: number) =>
  unit.repeat(Math.max(1, Math.ceil(bytes / unit.length)))

interface Case {
  name: string
  pair: (bytes: number) => [PromptVersion, PromptVersion]
  expect: (bytes: number) => Anatomy
}

/** Files in the many-files case: one line each, about 60 characters. */
const fileCount = (bytes: number) => Math.max(2, Math.floor(bytes / 60))

const v2 = (body: string) => `<memory root="/m">\n${body}\n</memory>`

const CASES: Case[] = [
  {
    name: 'one 200 KB line, metadata moved',
    pair: (b) => [
      version(`${'x'.repeat(b)}\n\n${META(1)}`),
      version(`${'x'.repeat(b)}\n\n${META(2)}`),
    ],
    expect: () => ({ changed: ['metadata'], memoryFiles: [] }),
  },
  {
    name: 'unclosed <file> blocks',
    pair: (b) => {
      const body = (n: number) => v2(`${fill('<file name="f">\nline\n', b)}${n}`)
      return [version(`${body(1)}\n\n${META(1)}`), version(`${body(2)}\n\n${META(2)}`, REV('b'))]
    },
    expect: () => ({ changed: ['memory'], memoryFiles: [] }),
  },
  {
    name: 'duplicate <file> names',
    pair: (b) => {
      const body = (n: number) => v2(`${fill('<file name="same">\nline\n</file>\n', b)}${n}`)
      return [version(`${body(1)}\n\n${META(1)}`), version(`${body(2)}\n\n${META(2)}`, REV('b'))]
    },
    expect: () => ({ changed: ['memory'], memoryFiles: [] }),
  },
  {
    name: 'metadata openings everywhere',
    pair: (b) => [
      version(`${fill('<memory_metadata>\n', b)}\n\n${META(1)}`),
      version(`${fill('<memory_metadata>\n', b)}\n\n${META(2)}`),
    ],
    expect: () => ({ changed: ['other'], memoryFiles: [] }),
  },
  {
    name: 'content almost matching the core memory everywhere',
    pair: (b) => {
      const core = (n: number) => `${'a'.repeat(b >> 1)}\n\n${META(n)}`
      const near = 'a'.repeat(b)
      const mk = (n: number) => ({ ...version(core(n)), content: `${near}${core(n).slice(0, -1)}` })
      return [mk(1), mk(2)]
    },
    expect: () => ({ changed: ['other'], memoryFiles: [] }),
  },
  {
    name: 'many well-formed files, one edited',
    pair: (b) => {
      const files = (edit: string) =>
        v2(
          Array.from({ length: fileCount(b) }, (_, i) =>
            [
              `<file name="f${i}.md">`,
              i === fileCount(b) >> 1 ? edit : `line ${i}`,
              '</file>',
            ].join('\n'),
          ).join('\n'),
        )
      return [
        version(`${files('old')}\n\n${META(1)}`),
        version(`${files('new')}\n\n${META(2)}`, REV('b')),
      ]
    },
    expect: (b) => ({ changed: ['memory'], memoryFiles: [`f${fileCount(b) >> 1}.md`] }),
  },
]

/** The median of `repeats` timed runs of the case at `bytes`, and its answer. */
function timeCase(c: Case, bytes: number, repeats: number): { ms: number; got: Anatomy } {
  const [a, b] = c.pair(bytes)
  let got = recompileAnatomy(a, b)
  const times: number[] = []
  for (let i = 0; i < repeats; i++) {
    const t = performance.now()
    got = recompileAnatomy(a, b)
    times.push(performance.now() - t)
  }
  times.sort((x, y) => x - y)
  return { ms: times[times.length >> 1], got }
}

/** Bound on one comparison of two versions of `bytes` each. */
const BOUND_MS = 100

export async function runAnatomy(o: AnatomyOptions): Promise<ScenarioResult> {
  const run = startScenario()
  for (const c of CASES) {
    const full = timeCase(c, o.bytes, o.repeats)
    const half = timeCase(c, o.bytes >> 1, o.repeats)
    const growth = half.ms > 0 ? full.ms / half.ms : 1
    run.rows.push(
      row(`${c.name}: ms per comparison`, full.ms, 'ms', `< ${BOUND_MS} ms`, full.ms < BOUND_MS),
      row(`${c.name}: time x2 input`, growth, 'x', '<= 3x (linear)', growth <= 3),
    )
    const want = c.expect(o.bytes)
    run.checks.push({
      name: `${c.name}: ${want.changed.join('+')}`,
      ok: JSON.stringify(full.got) === JSON.stringify(want),
      detail: JSON.stringify(full.got),
    })
  }
  return scenarioResult(
    run,
    { serverUrl: null },
    {
      scenario: 'anatomy',
      title: `Recompile anatomy on adversarial ${Math.round(o.bytes / 1000)} KB input`,
      notes: [
        'recompileAnatomy (src/model/recompile-anatomy.ts) on two versions of a prompt, in process; the median of the timed runs after one warm-up',
        'time x2 input: the same case at the full size over half of it; about 2 for linear work, 4 for quadratic',
      ],
      params: { ...o },
    },
  )
}

if (isMain(import.meta.url)) await runAsMain(() => runAnatomy(anatomyOptionsFromEnv()))
