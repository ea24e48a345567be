// The README of examples/: what the sample holds and what a correct indexer ends with.
// Generated with the sample so the numbers cannot drift from the data.

import type { GeneratorInput, GeneratorStats } from '../demo-network/generator.ts'
import type { ApplyOutcome, ModelPrompt, ModelStats } from '../test/helpers/reference-model.ts'

/** A generated sample and what a correct indexer ends with on it (make-sample.ts builds it). */
export interface Sample {
  seed: number
  lines: string[]
  broken: Array<{ line: number; what: string }>
  generator: GeneratorStats
  outcomes: Record<ApplyOutcome, number>
  /** DIDs with commits whose last account event hid them without purging */
  hidden: Array<{ did: string; status: string }>
  stats: ModelStats
  prompts: ModelPrompt[]
  staleTemplateRules: { agentHash: number; inferred: number }
  /** the same flags whether indexing time is the event's time_us or much later */
  clockFree: boolean
}

const table = (rows: Array<[string, string | number]>, head: [string, string]): string =>
  [`| ${head[0]} | ${head[1]} |`, '|---|---:|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join(
    '\n',
  )

const sorted = (o: Record<string, number>): Array<[string, number]> =>
  Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1))

export function renderReadme(s: Sample, opts: GeneratorInput): string {
  const g = s.generator
  const flags = Object.entries(s.stats.flags) as Array<[string, number]>
  return `# examples

\`sample.ndjson\` is a small simulated Letta network in Jetstream v1 format (one event
per line): ${s.lines.length} lines, ${opts.dids} Letta repos with \
${opts.agentsPerDid?.min}-${opts.agentsPerDid?.max} agents each,
prompts of ${opts.contentBytes?.min}-${opts.contentBytes?.max} bytes. \
\`node scripts/make-sample.ts\` makes it from the demo generator
(\`demo-network/generator.ts\`, seed ${s.seed}) and reproduces it byte for byte. Replay it with
\`npm start\`.

\`sample.expected.json\` is the end state a correct indexer reaches after replaying the whole
file once (or any number of times: replays change nothing): the stats and every visible
prompt with its flags and \`recompiles\`, as computed by the reference model of the flag rules in
\`docs/flags.md\` (\`test/helpers/reference-model.ts\`), not by the indexer.

## Expected end state (\`GET /v1/stats\`)

${table(
  [
    ['prompts', s.stats.prompts],
    ['conversations', s.stats.conversations],
    ['agents', s.stats.agents],
    ...flags.map(([f, n]): [string, number] => [`flags.${f}`, n]),
  ],
  ['field', 'value'],
)}

staleTemplate comes from both rules: ${s.staleTemplateRules.agentHash} prompt(s) by the
agent record's \`system\` hash, ${s.staleTemplateRules.inferred} inferred from a later compile
of an agent without \`system\`.

Hidden at the end (their records are kept but excluded from every count above):
${s.hidden.map((h) => `\`${h.did}\` (${h.status})`).join(', ')}.

## What is in the file

${table(
  [
    ['commit', g.byKind.commit],
    ['account', g.byKind.account],
    ['identity', g.byKind.identity],
    ['broken lines', s.broken.length],
  ],
  ['event kind', 'lines'],
)}

${table(sorted(g.commits), ['collection:operation', 'commits'])}

What the generator did on purpose (intent; the flags above are the outcome):

${table(sorted(g.anomalies), ['event', 'count'])}

Legend: \`sidecarFirst\` a prompt written before its conversation; \`mismatched:*\` the
prompt's \`conversation\` names another rkey, collection or repo; \`coreMemoryDetached\`
\`coreMemory\` is a later memory render absent from \`content\`; \`hashVariant:*\`
\`rawSystemHash\` with a \`sha256:\` prefix and/or uppercase (same hash, not stale);
\`futureCompiledAt\` \`compiledAt\` more than five minutes after the event (not evidence);
\`offsetCompiledAt\` \`compiledAt\` in a non-UTC offset (compared as an instant);
\`invalid:*\` lexicon or strict-datetime violations; \`nonTidRkey\` a conversation slot
whose rkey is not a TID (its prompt is invalid); \`memfsBump\` a memory change that shows
in the next compile's \`memfsRevision\`; \`templateChange\` an agent update with a new
\`system\` (\`:noSystem\`: the agent has none, so only compiles show it);
\`takedown:*\` / \`reactivation\` / \`purge\` account events (\`purge\` = status
\`deleted\`); \`noise:*\` records of other collections (\`app.bsky.feed.post\`,
\`xyz.quasigod.lab.letta.other\`) and account / identity events of repos with no Letta
records, none of which may be stored.

Broken lines, which a replay must skip (count as \`outcome="error"\`) and go past:

${s.broken.map((b) => `- line ${b.line}: ${b.what}`).join('\n')}

The reference model's outcome per line: ${s.outcomes.applied} applied,
${s.outcomes.ignored} ignored (other collections), ${s.outcomes.skipped} skipped (broken).

## Readings of the spec behind the expected numbers

- Validity: the published lexicon (\`@atproto/lexicon\`, \`maxLength\` in
  UTF-8 bytes), then \`compiledAt\` by the strict datetime rule, then a TID record key.
- A field a flag needs that is missing or of the wrong type leaves that flag unset (a
  prompt whose \`compiledAt\` is not a strict datetime gets no inferred staleness), except
  \`mismatched\`: anything other than the exact at-uri of the slot is a mismatch.
- At-uris are compared as exact strings; the agent is looked up by its exact at-uri.
- Evidence for the inferred rules: valid, live prompts of the same repo naming the same
  agent at-uri, with a strictly later \`compiledAt\` instant that is at most five minutes
  ahead of when that prompt was indexed. The sample's \`futureCompiledAt\` prompts decide
  no flag, so the expected flags hold whether an indexer judges this by the event's
  \`time_us\` or by its wall clock.
- A commit whose record is not an object is unparseable and skipped, not stored.
- Identity events name \`*.example.com\` handles that cannot be verified offline: stored as
  absent unless the indexer's resolvers are stubbed. No count depends on them.
`
}
