// JSON schemas of the revision history routes (see schemas.ts for the conventions).

const str = { type: 'string' } as const
const nullableStr = { type: ['string', 'null'] } as const
const described = <T extends object>(schema: T, description: string) =>
  ({ ...schema, description }) as const

/** An object schema whose every property is required unless `required` says otherwise. */
function object<P extends Record<string, object>>(properties: P, required?: string[]) {
  return { type: 'object', properties, required: required ?? Object.keys(properties) } as const
}

const revisionProperties = {
  rev: str,
  cid: str,
  compiledAt: nullableStr,
  rawSystemHash: nullableStr,
  memfsRevision: nullableStr,
  contentHash: described(nullableStr, 'Lowercase hex SHA-256 of content'),
  seenAt: { type: 'string', format: 'date-time' },
} as const

export const revisionSchema = object(revisionProperties)

export const revisionPageSchema = object(
  {
    uri: str,
    items: { type: 'array', items: revisionSchema },
    cursor: described(str, 'Pass back for older revisions; absent on the last page'),
  },
  ['uri', 'items'],
)

export const revisionDetailSchema = {
  ...object({
    uri: str,
    ...revisionProperties,
    contentKept: described(
      { type: 'boolean' },
      'false for revisions indexed before revision content was kept',
    ),
    content: nullableStr,
    coreMemory: nullableStr,
    note: described(nullableStr, 'Why content is null, when it is'),
  }),
  description: 'One revision with its content and coreMemory',
} as const

const hunkList = {
  type: ['array', 'null'],
  description: 'null when the content of either revision is not available (see note)',
  items: object(
    {
      op: { type: 'string', enum: ['equal', 'insert', 'delete'] },
      lines: { type: 'array', items: str },
      skipped: described(
        { type: 'integer' },
        'A collapsed unchanged run: this many lines stand here; lines is empty',
      ),
    },
    ['op', 'lines'],
  ),
} as const

export const revisionDiffSchema = {
  ...object({
    uri: str,
    from: described(nullableStr, 'null: diffed against nothing (first revision)'),
    to: str,
    content: hunkList,
    coreMemory: hunkList,
    note: nullableStr,
  }),
  description: 'Line diff of content and of coreMemory between two revisions',
} as const
