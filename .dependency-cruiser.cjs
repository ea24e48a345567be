// The layers of src/ (ARCHITECTURE.md), enforced: imports go one way, down.
//
//   cli  ->  ingest | api  ->  indexer  ->  context  ->  db  ->  bottom  ->  model
//   cli, api  ->  export  ->  db
//
// demo-network/ (top level: the local Jetstream servers and event generator that `demo`, the
// tests and the benches run) stands apart: it may use src/model only, and of src/ only
// cli/demo.ts imports it. Tests never import bench/ (benches may use test helpers).
//
// model (src/model/) is pure and imports nothing of the project. "bottom" is what a process is
// configured and observed with: config/ (the schema, its parse, the version), observe/ (logger,
// metrics), faults/ (error classes, backoff); it may import model only. context/ is the
// dependency bag the layers above db/ are handed. ingest/ and api/ never import each other.
// export/ (the snapshot export's file writers) sits on db/ beside indexer/, for api/ and
// cli/. Nothing imports cli/ but cli/.
// `npm run deps` runs this; .ci/run fails on any error.

const BOTTOM = '^src/(config|observe|faults)/'

/** A forbidden import from modules matching `from` to modules matching `to`. */
const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to })
const src = (pathNot) => ({ path: '^src/', pathNot })

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    forbid('model-is-pure', 'src/model/ is pure types and rules: it imports nothing of src/.',
      { path: '^src/model/' }, src('^src/model/')),
    forbid('bottom-imports-model-only', 'config, logger, metrics, errors, version: model only.',
      { path: BOTTOM }, src([BOTTOM, '^src/model/'])),
    forbid('db-imports-model-and-bottom-only', 'db/ is all the SQL; it knows nothing above.',
      { path: '^src/db/' }, src(['^src/db/', '^src/model/', BOTTOM])),
    forbid('context-below-indexer', 'The dependency bag cannot need what it is handed to.',
      { path: '^src/context/' }, { path: '^src/(indexer|ingest|api|cli)/' }),
    forbid('indexer-below-sources-and-api', 'indexer/ knows no source, no API, no CLI.',
      { path: '^src/indexer/' }, { path: '^src/(ingest|api|cli)/' }),
    forbid('export-reads-db-only', 'export/ writes snapshot files from db/ reads; nothing above.',
      { path: '^src/export/' }, { path: '^src/(indexer|ingest|api|cli)/' }),
    forbid('ingest-not-api', 'ingest/ and api/ are siblings: they never import each other.',
      { path: '^src/ingest/' }, { path: '^src/api/' }),
    forbid('api-not-ingest', 'ingest/ and api/ are siblings: they never import each other.',
      { path: '^src/api/' }, { path: '^src/ingest/' }),
    forbid('demo-network-speaks-wire-only',
      'The demo network serves wire formats from model types: no layer of the product, no test or bench code.',
      { path: '^demo-network/' }, { path: ['^src/(?!model/)', '^(test|bench|scripts)/'] }),
    forbid('product-without-demo-network', 'Of src/, only the demo command runs the demo network.',
      { path: '^src/', pathNot: '^src/cli/demo[.]ts$' }, { path: '^demo-network/' }),
    forbid('tests-not-benches', 'Tests never import bench/: what both need lives in test/helpers/ or demo-network/.',
      { path: '^test/' }, { path: '^bench/' }),
    forbid('sql-only-in-db', 'Every SQL statement of the product is in db/ (drizzle stays there).',
      src('^src/db/'), { path: '^node_modules/drizzle-orm/' }),
    forbid('drizzle-values-through-orm',
      "drizzle-orm's values load from its CommonJS build in db/orm.ts (start-up cost: bench/README.md); other files import its types only.",
      src('^src/db/orm[.]ts$'), { path: '^node_modules/drizzle-orm/', dependencyTypesNot: ['type-only'] }),
    forbid('nothing-imports-cli', 'cli/ wires the layers together; nothing in src/ imports it.',
      src('^src/cli/'), { path: '^src/cli/' }),
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
    exclude: { path: '^(docs|drizzle/meta)' },
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
