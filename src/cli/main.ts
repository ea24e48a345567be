#!/usr/bin/env node
import { execWithRuntimeFlags } from './node-flags.ts'

// The program's entry. The heap caps come first, before anything else loads: a process
// started without them (`node src/cli/main.ts serve`, as a supervisor or the README
// would) replaces itself with one that has them (node-flags.ts).
execWithRuntimeFlags()
const { runMain } = await import('./commands.ts')
await runMain(process.argv.slice(2))
