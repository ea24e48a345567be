import { connect } from 'node:net'
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib'

// HTTP/1.1 over a bare socket: any method token (CONNECT, TRACE, junk), any request
// target byte for byte (no URL normalisation), and a dropped connection seen as such.

export interface RawRequest {
  method: string
  target: string
  headers: Record<string, string>
  body?: string
}

export interface RawResponse {
  /** null: the connection closed (or timed out) without a status line. */
  status: number | null
  headers: Record<string, string>
  body: string
  ms: number
  error?: string
}

export function rawRequest(
  host: string,
  port: number,
  r: RawRequest,
  timeoutMs = 30_000,
): Promise<RawResponse> {
  const t0 = Date.now()
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    const sock = connect(port, host)
    let done = false
    const finish = (error?: string) => {
      if (done) return
      done = true
      clearTimeout(timer)
      sock.destroy()
      resolve({
        ...parse(Buffer.concat(chunks), r.method === 'HEAD'),
        ms: Date.now() - t0,
        ...(error ? { error } : {}),
      })
    }
    const timer = setTimeout(() => finish('timeout'), timeoutMs)
    sock.on('data', (d) => chunks.push(d))
    sock.on('end', () => finish())
    sock.on('close', () => finish())
    sock.on('error', (e) => finish(e.message))
    const body = r.body ?? ''
    const head = Object.entries({ host: `${host}:${port}`, connection: 'close', ...r.headers })
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n')
    const len =
      body || ['POST', 'PUT', 'PATCH'].includes(r.method)
        ? `\r\ncontent-length: ${Buffer.byteLength(body)}`
        : ''
    sock.write(`${r.method} ${r.target} HTTP/1.1\r\n${head}${len}\r\n\r\n${body}`)
  })
}

function parse(all: Buffer, head: boolean): Omit<RawResponse, 'ms'> {
  // Interim answers (100 Continue to `expect: 100-continue`) come before the real one.
  let buf = all
  while (/^HTTP\/1\.[01] 1\d\d /.test(buf.subarray(0, 16).toString('latin1'))) {
    const e = buf.indexOf('\r\n\r\n')
    if (e < 0) break
    buf = buf.subarray(e + 4)
  }
  const end = buf.indexOf('\r\n\r\n')
  if (end < 0) return { status: null, headers: {}, body: buf.toString('latin1').slice(0, 200) }
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n')
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0])
  const headers: Record<string, string> = {}
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':')
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
  }
  let raw = buf.subarray(end + 4)
  if (head) raw = Buffer.alloc(0)
  else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) raw = dechunk(raw)
  let body: string
  try {
    body = decode(raw, headers['content-encoding']).toString('utf8')
  } catch (err) {
    body = `<undecodable ${headers['content-encoding']} body: ${(err as Error).message}>`
  }
  return { status: m ? Number(m[1]) : null, headers, body }
}

function dechunk(b: Buffer): Buffer {
  const out: Buffer[] = []
  let at = 0
  while (at < b.length) {
    const eol = b.indexOf('\r\n', at)
    if (eol < 0) break
    const n = Number.parseInt(b.subarray(at, eol).toString('latin1'), 16)
    if (!(n > 0)) break
    out.push(b.subarray(eol + 2, eol + 2 + n))
    at = eol + 2 + n + 2
  }
  return Buffer.concat(out)
}

function decode(b: Buffer, enc: string | undefined): Buffer {
  if (!enc || b.length === 0) return b
  if (enc === 'gzip') return gunzipSync(b)
  if (enc === 'br') return brotliDecompressSync(b)
  if (enc === 'deflate') return inflateSync(b)
  return b
}
