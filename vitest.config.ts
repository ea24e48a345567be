import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import { driverDependentTests } from './test/helpers/driver-dependent.ts'

const root = fileURLToPath(new URL('.', import.meta.url))

export default defineConfig({
  test: {
    // On Postgres (TEST_DATABASE_URL), only the files whose database it decides: the rest
    // ran the same on PGlite.
    include: process.env.TEST_DATABASE_URL
      ? driverDependentTests(root)
      : ['test/**/*.test.ts', 'src/**/*.test.ts', 'bench/test/*.test.ts'],
    // Two cores: more workers only contend for the same database and CPU.
    maxWorkers: 2,
    // Test files share their worker's module graph instead of importing it afresh: imports
    // were a third of the suite's CPU time (bench/README.md, "The test loop").
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})
