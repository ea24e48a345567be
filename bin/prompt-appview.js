#!/usr/bin/env node
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// `npx prompt-appview <command>`: runs src/cli/main.ts on the Node the project pins
// (node_modules/node), whatever Node started this file, since the sources are TypeScript
// that only Node 24 runs as they are; main.ts adds the memory flags it ships with.

const root = fileURLToPath(new URL('..', import.meta.url))
const node = `${root}node_modules/node/bin/node`
const main = `${root}src/cli/main.ts`

const child = spawn(node, [main, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: {
    NODE_COMPILE_CACHE: `${root}node_modules/.cache/prompt-appview/compile`,
    ...process.env,
  },
})
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal))
}
child.on('error', (err) => {
  console.error(`prompt-appview: could not start ${node}: ${err.message} (run npm ci first)`)
  process.exit(1)
})
child.on('exit', (code, signal) => {
  process.exit(code ?? (signal ? 128 : 1))
})
