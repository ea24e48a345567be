// The layers of src/ (ARCHITECTURE.md), enforced: imports go one way, down.
//
//   cli  ->  ingest | api | demo  ->  indexer  ->  context  ->  db  ->  bottom  ->  model
//
// model (src/model/) is pure and imports nothing of the project. "bottom" is the top-level
// src/*.ts a process is configured and observed with (config, logger, metrics, errors,
// version); it may import model only. context.ts is the dependency bag the layers above
// db/ are handed. ingest/ and api/ never import each other. Nothing imports cli/ but cli/.
// `npm run deps` runs this; .ci/run fails on any error.

const BOTTOM = '^src/(config|logger|metrics|chain-metrics|errors|version)[.]ts$'

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'model-is-pure',
      comment: 'src/model/ holds pure types and rules: it imports nothing of the project.',
      severity: 'error',
      from: { path: '^src/model/' },
      to: { path: '^src/', pathNot: '^src/model/' },
    },
    {
      name: 'bottom-imports-model-only',
      comment: 'config, logger, metrics, errors, version sit beside model: they import model only.',
      severity: 'error',
      from: { path: BOTTOM },
      to: { path: '^src/', pathNot: [BOTTOM, '^src/model/'] },
    },
    {
      name: 'db-imports-model-and-bottom-only',
      comment: 'db/ is all the SQL: it knows the shapes (model) and the bottom, nothing above.',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: '^src/', pathNot: ['^src/db/', '^src/model/', BOTTOM] },
    },
    {
      name: 'context-below-indexer',
      comment: 'The dependency bag is handed to indexer/, ingest/ and api/: it cannot need them.',
      severity: 'error',
      from: { path: '^src/context[.]ts$' },
      to: { path: '^src/(indexer|ingest|api|demo|cli)/' },
    },
    {
      name: 'indexer-below-sources-and-api',
      comment: 'indexer/ turns normalized events into writes: it knows no source, no API, no CLI.',
      severity: 'error',
      from: { path: '^src/indexer/' },
      to: { path: '^src/(ingest|api|demo|cli)/' },
    },
    {
      name: 'ingest-not-api',
      comment: 'ingest/ and api/ are siblings over indexer/: they never import each other.',
      severity: 'error',
      from: { path: '^src/ingest/' },
      to: { path: '^src/(api|demo)/' },
    },
    {
      name: 'api-not-ingest',
      comment: 'ingest/ and api/ are siblings over indexer/: they never import each other.',
      severity: 'error',
      from: { path: '^src/api/' },
      to: { path: '^src/(ingest|demo)/' },
    },
    {
      name: 'demo-not-api',
      comment: 'The demo network speaks the wire formats (ingest/), it serves no API.',
      severity: 'error',
      from: { path: '^src/demo/' },
      to: { path: '^src/(api|indexer|db)/' },
    },
    {
      name: 'nothing-imports-cli',
      comment: 'cli/ is the top: it wires the layers together, and nothing in src/ imports it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'no-circular',
      comment: 'A cycle makes two modules one: split out what both need.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-orphans',
      comment: 'A module nothing imports and that imports nothing is dead (knip says more).',
      severity: 'error',
      from: {
        orphan: true,
        pathNot: [
          '(^|/)[.][^/]+[.](?:js|cjs|mjs|ts|json)$',
          '[.]d[.]ts$',
          '(^|/)tsconfig[.]json$',
          '^src/cli/main[.]ts$',
          // Served to the browser by @fastify/static, never imported.
          '^src/api/ui/assets/',
          '^(test|bench|scripts)/',
          '^(drizzle|vitest)[.]config[.]ts$',
        ],
      },
      to: {},
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that resolves to nothing fails at run time.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|docs|drizzle/meta)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
}
