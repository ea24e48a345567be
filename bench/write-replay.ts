import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { parseArgs } from 'node:util'
import { benchGenerator, emptyTally, tally } from './lib/traffic.ts'

// Writes a Jetstream-format replay file of Letta-heavy traffic (the benches' generator with
// realistic record sizes, no network noise), for runs that need one on disk, such as a long
// replay under a memory limit (bench/README.md, "Memory limit"):
//
//   node bench/write-replay.ts --events 200000 --out /tmp/letta-200k.ndjson [--dids 2000]

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '200000' },
    dids: { type: 'string', default: '2000' },
    out: { type: 'string' },
  },
})
if (!values.out) throw new Error('usage: write-replay.ts --events N --out FILE [--dids N]')

const gen = benchGenerator({ dids: Number(values.dids), noiseRatio: 0 })
const t = emptyTally()
const out = createWriteStream(values.out)
const events = Number(values.events)
while (t.sent < events) {
  const line = tally(t, gen.next())
  if (line !== null && !out.write(`${line}\n`)) await once(out, 'drain')
}
out.end()
await once(out, 'finish')
const mb = (b: number) => `${(b / (1 << 20)).toFixed(0)} MB`
console.log(
  JSON.stringify({ out: values.out, events: t.sent, matching: t.matching, bytes: mb(t.lineBytes) }),
)
