// Options of the demo network generator, with defaults tuned so a few thousand events
// already show every flag, and a check that stops nonsense before any event is made.

export interface Range {
  min: number
  max: number
}

/** Probabilities, each drawn independently where it applies. */
export interface AnomalyRates {
  /** per prompt write: `conversation` names another rkey, collection or DID */
  mismatched: number
  /** per prompt write: `coreMemory` is a later memory render absent from `content` */
  coreMemoryDetached: number
  /** per prompt write: one lexicon/datetime violation (see `invalidKinds`) */
  invalid: number
  /** per prompt write: `rawSystemHash` as `sha256:<hex>` or uppercase (valid, same hash) */
  hashVariant: number
  /** per prompt write: `compiledAt` 10 min to 2 h ahead of the event time (not evidence) */
  futureCompiledAt: number
  /** per prompt write: `compiledAt` written with a non-UTC offset (same kind of instant) */
  offsetCompiledAt: number
  /** per new conversation: the prompt is written first, the conversation later */
  sidecarFirst: number
  /** per new conversation: a record key that is not a TID (makes the prompt invalid) */
  nonTidRkey: number
  /** per conversation delete: the prompt is deleted a little later too (else it stays orphaned) */
  promptCleanup: number
  /** per agent: the agent record has no `system` (staleTemplate can only be inferred) */
  agentWithoutSystem: number
  /** per agent: no memfs, so its prompts carry no `memfsRevision` */
  agentWithoutMemfs: number
  /** per takedown: the account is reactivated later */
  reactivate: number
}

export type InvalidKind = 'missingField' | 'wrongType' | 'naiveDatetime' | 'badAtUri' | 'overLimit'

/** Relative weights of what happens next on the network (noise excepted). */
export interface ActionWeights {
  newConversation: number
  recompile: number
  templateChange: number
  memfsBump: number
  conversationDelete: number
  promptDelete: number
  takedown: number
  purge: number
  identity: number
}

export interface GeneratorOptions {
  seed: number
  /** DIDs that use Letta (replaced by fresh ones when purged) */
  dids: number
  agentsPerDid: Range
  /** UTF-8 bytes of a prompt's `content` (except `overLimit` invalid prompts) */
  contentBytes: Range
  /** fraction of events that are noise: other collections, other DIDs' account/identity */
  noiseRatio: number
  /** DIDs that never write Letta records (noise only) */
  noiseDids: number
  startTimeUs: number
  /** mean gap between events; each gap is 1..2*mean µs */
  meanIntervalUs: number
  /** CIDs of the dag-cbor encoding (true) or derived from a cheaper hash (still parseable) */
  realCids: boolean
  /** conversations remembered per DID for later updates; older ones are never touched again */
  maxSlotsPerDid: number
  promptNsid: string
  conversationNsid: string
  agentNsid: string
  rates: AnomalyRates
  invalidKinds: InvalidKind[]
  weights: ActionWeights
}

export interface GeneratorInput extends Partial<Omit<GeneratorOptions, 'rates' | 'weights'>> {
  rates?: Partial<AnomalyRates>
  weights?: Partial<ActionWeights>
}

export const DEFAULT_RATES: AnomalyRates = {
  mismatched: 0.03,
  coreMemoryDetached: 0.04,
  invalid: 0.03,
  hashVariant: 0.1,
  futureCompiledAt: 0.01,
  offsetCompiledAt: 0.05,
  sidecarFirst: 0.15,
  nonTidRkey: 0.01,
  promptCleanup: 0.3,
  agentWithoutSystem: 0.3,
  agentWithoutMemfs: 0.15,
  reactivate: 0.75,
}

export const DEFAULT_WEIGHTS: ActionWeights = {
  newConversation: 30,
  recompile: 30,
  templateChange: 2,
  memfsBump: 6,
  conversationDelete: 3,
  promptDelete: 1.5,
  takedown: 0.4,
  purge: 0.1,
  identity: 1,
}

export const ALL_INVALID_KINDS: InvalidKind[] = [
  'missingField',
  'wrongType',
  'naiveDatetime',
  'badAtUri',
  'overLimit',
]

/** The smallest content size a range may ask for. */
export const MIN_CONTENT_BYTES = 1024
/** Room for Letta's compile (template, memory projection, metadata) around the bodies. */
const MIN_MAX_CONTENT_BYTES = 2048

export function resolveOptions(input: GeneratorInput = {}): GeneratorOptions {
  const o: GeneratorOptions = {
    seed: 1,
    dids: 50,
    agentsPerDid: { min: 1, max: 4 },
    contentBytes: { min: 4096, max: 32768 },
    noiseRatio: 0.2,
    noiseDids: input.dids ?? 50,
    startTimeUs: 1764460800000000,
    meanIntervalUs: 2000,
    realCids: true,
    maxSlotsPerDid: 64,
    promptNsid: 'xyz.quasigod.lab.letta.compiledPrompt',
    conversationNsid: 'xyz.quasigod.lab.letta.conversation',
    agentNsid: 'xyz.quasigod.lab.letta.agent',
    invalidKinds: ALL_INVALID_KINDS,
    ...input,
    rates: { ...DEFAULT_RATES, ...input.rates },
    weights: { ...DEFAULT_WEIGHTS, ...input.weights },
  }
  const problems = [...boundProblems(o), ...tableProblems(o)]
  if (problems.length) throw new Error(`bad generator options: ${problems.join('; ')}`)
  return o
}

/** The scalar options: whole numbers within their bounds, the noise share a fraction. */
function boundProblems(o: GeneratorOptions): string[] {
  const problems: string[] = []
  const intAtLeast = (name: string, v: number, lo: number) => {
    if (!Number.isSafeInteger(v) || v < lo) problems.push(`${name} must be an integer >= ${lo}`)
  }
  intAtLeast('seed', o.seed, Number.MIN_SAFE_INTEGER)
  intAtLeast('dids', o.dids, 1)
  intAtLeast('noiseDids', o.noiseDids, 1)
  intAtLeast('agentsPerDid.min', o.agentsPerDid.min, 1)
  intAtLeast('agentsPerDid.max', o.agentsPerDid.max, o.agentsPerDid.min)
  intAtLeast('contentBytes.min', o.contentBytes.min, MIN_CONTENT_BYTES)
  intAtLeast(
    'contentBytes.max',
    o.contentBytes.max,
    Math.max(o.contentBytes.min, MIN_MAX_CONTENT_BYTES),
  )
  if (o.contentBytes.max > 200_000) problems.push('contentBytes.max must be <= 200000')
  intAtLeast('startTimeUs', o.startTimeUs, 0)
  intAtLeast('meanIntervalUs', o.meanIntervalUs, 1)
  intAtLeast('maxSlotsPerDid', o.maxSlotsPerDid, 1)
  if (!(o.noiseRatio >= 0 && o.noiseRatio < 1)) problems.push('noiseRatio must be in [0, 1)')
  return problems
}

/** The tables: rates are probabilities, weights non-negative, invalid kinds known ones. */
function tableProblems(o: GeneratorOptions): string[] {
  const problems: string[] = []
  for (const [k, v] of Object.entries(o.rates)) {
    if (!(v >= 0 && v <= 1)) problems.push(`rates.${k} must be in [0, 1]`)
  }
  for (const [k, v] of Object.entries(o.weights)) {
    if (!(v >= 0 && Number.isFinite(v))) problems.push(`weights.${k} must be >= 0`)
  }
  if (o.weights.newConversation <= 0) problems.push('weights.newConversation must be > 0')
  for (const k of o.invalidKinds) {
    if (!ALL_INVALID_KINDS.includes(k)) problems.push(`unknown invalid kind ${k}`)
  }
  return problems
}
