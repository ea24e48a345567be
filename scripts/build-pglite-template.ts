import { PGlite } from '@electric-sql/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import { migrate } from 'drizzle-orm/pglite/migrator'
import { MIGRATIONS_DIR } from '../src/db/client.ts'
import { TEMPLATE_FILE, writeTemplate } from '../src/db/pglite-template.ts'

// `npm run db:template`: the one place that still runs PGlite's initdb. It initializes a
// data directory in memory, applies every migration of drizzle/ and writes it as the
// template a first start loads (src/db/pglite-template.ts). Run it after a PGlite upgrade
// (a template from another Postgres version does not start) and, to spare new databases
// the newest migrations, after `npm run db:generate`.

const t0 = performance.now()
const pg = new PGlite()
await pg.waitReady
await migrate(drizzle(pg) as never, { migrationsFolder: MIGRATIONS_DIR })
const bytes = await writeTemplate(pg)
await pg.close()
console.log(
  `${TEMPLATE_FILE}: ${(bytes / 1024).toFixed(0)} KiB, in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
)
