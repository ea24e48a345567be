import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { WebSocketServer } from 'ws'
import { readFramesFile } from './frames-cache.ts'

// A local subscribeRepos endpoint in its own process: it replays a frames file (seq i+1 is
// frame i) from the requested cursor to each connection as fast as the reader takes it.
// argv: the frames file. Prints the port on stdout once listening.

const frames = readFramesFile(process.argv[2])
const HIGH_WATER = 4 << 20
const http = createServer((_req, res) => res.writeHead(404).end())
const wss = new WebSocketServer({ server: http, path: '/xrpc/com.atproto.sync.subscribeRepos' })
wss.on('connection', async (ws, req) => {
  const cursor = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('cursor') || 0)
  ws.on('error', () => {})
  for (let i = Math.max(0, cursor); i < frames.length; i++) {
    if (ws.readyState !== ws.OPEN) return
    if (ws.bufferedAmount > HIGH_WATER) {
      await new Promise<void>((resolve) => ws.send(frames[i], { binary: true }, () => resolve()))
    } else {
      ws.send(frames[i], { binary: true })
    }
  }
})
http.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(http.address() as AddressInfo).port}\n`)
})
process.on('SIGTERM', () => process.exit(0))
