// JSON schemas of the revision history routes (see schemas.ts for the conventions).

const str = { type: 'string' } as const
const nullableStr = { type: ['string', 'null'] } as const

export const revisionSchema = {
  type: 'object',
  properties: {
    rev: str,
    cid: str,
    compiledAt: nullableStr,
    rawSystemHash: nullableStr,
    memfsRevision: nullableStr,
    contentHash: { type: ['string', 'null'], description: 'Lowercase hex SHA-256 of content' },
    seenAt: { type: 'string', format: 'date-time' },
  },
  required: ['rev', 'cid', 'compiledAt', 'rawSystemHash', 'memfsRevision', 'contentHash', 'seenAt'],
} as const

export const revisionPageSchema = {
  type: 'object',
  properties: {
    uri: str,
    items: { type: 'array', items: revisionSchema },
    cursor: {
      type: 'string',
      description: 'Pass back for older revisions; absent on the last page',
    },
  },
  required: ['uri', 'items'],
} as const

export const revisionDetailSchema = {
  type: 'object',
  description: 'One revision with its content and coreMemory',
  properties: {
    uri: str,
    ...revisionSchema.properties,
    contentKept: {
      type: 'boolean',
      description: 'false for revisions indexed before revision content was kept',
    },
    content: nullableStr,
    coreMemory: nullableStr,
    note: { type: ['string', 'null'], description: 'Why content is null, when it is' },
  },
  required: [...revisionSchema.required, 'uri', 'contentKept', 'content', 'coreMemory', 'note'],
} as const

const hunkList = {
  type: ['array', 'null'],
  description: 'null when the content of either revision is not available (see note)',
  items: {
    type: 'object',
    properties: {
      op: { type: 'string', enum: ['equal', 'insert', 'delete'] },
      lines: { type: 'array', items: str },
      skipped: {
        type: 'integer',
        description: 'A collapsed unchanged run: this many lines stand here; lines is empty',
      },
    },
    required: ['op', 'lines'],
  },
} as const

export const revisionDiffSchema = {
  type: 'object',
  description: 'Line diff of content and of coreMemory between two revisions',
  properties: {
    uri: str,
    from: {
      type: ['string', 'null'],
      description: 'null: diffed against nothing (first revision)',
    },
    to: str,
    content: hunkList,
    coreMemory: hunkList,
    note: nullableStr,
  },
  required: ['uri', 'from', 'to', 'content', 'coreMemory', 'note'],
} as const

export const revParam = {
  type: 'string',
  minLength: 1,
  maxLength: 512,
  description: 'Revision (the commit rev, a TID)',
} as const
