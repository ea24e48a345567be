import { createRequire } from 'node:module'

// drizzle-orm's values come from its CommonJS build, through this file alone (its types from
// 'drizzle-orm' as usual): Node 24 parses the ES-module build's `exports` map again for each of
// its files at start (bench/README.md, "Start-up: loading the modules"; drizzle-orm#5934).
const require = createRequire(import.meta.url)

export const {
  and,
  asc,
  count,
  desc,
  eq,
  getTableColumns,
  gt,
  inArray,
  is,
  isNotNull,
  max,
  ne,
  not,
  notInArray,
  Placeholder,
  sql,
} = require('drizzle-orm') as typeof import('drizzle-orm')

export const {
  bigint,
  bigserial,
  boolean,
  check,
  customType,
  index,
  integer,
  jsonb,
  PgDialect,
  pgTable,
  primaryKey,
  text,
  timestamp,
} = require('drizzle-orm/pg-core') as typeof import('drizzle-orm/pg-core')

/** The drivers and their migrators, loaded with the first database of their kind. */
export const drivers = {
  pglite: () => require('drizzle-orm/pglite') as typeof import('drizzle-orm/pglite'),
  pgliteMigrator: () =>
    require('drizzle-orm/pglite/migrator') as typeof import('drizzle-orm/pglite/migrator'),
  postgres: () => require('drizzle-orm/postgres-js') as typeof import('drizzle-orm/postgres-js'),
  postgresMigrator: () =>
    require('drizzle-orm/postgres-js/migrator') as typeof import('drizzle-orm/postgres-js/migrator'),
}
