import { isValidDid, isValidNsid } from '@atproto/syntax'

// The config schema's value parsers: each returns the value or throws the reason.

export type Parse<T> = (raw: string) => T

export const str: Parse<string> = (s) => {
  if (s.trim() === '') throw new Error('must not be empty')
  return s
}
/** `parse`, with the empty string for null (an unset value). */
export const orNull =
  <T>(parse: Parse<T>): Parse<T | null> =>
  (s) =>
    s === '' ? null : parse(s)
export const nullable = orNull((s) => s)
export const int =
  (min: number, max: number): Parse<number> =>
  (s) => {
    const n = Number(s)
    if (!Number.isInteger(n) || n < min || n > max)
      throw new Error(`must be an integer from ${min} to ${max}`)
    return n
  }
export const bool: Parse<boolean> = (s) => {
  if (/^(1|true|yes|on)$/i.test(s)) return true
  if (/^(0|false|no|off)$/i.test(s)) return false
  throw new Error('must be true or false')
}
export const url =
  (...protocols: string[]): Parse<string> =>
  (s) => {
    let u: URL
    try {
      u = new URL(s)
    } catch {
      throw new Error('must be a URL')
    }
    if (!protocols.includes(u.protocol)) throw new Error(`must use ${protocols.join(' or ')}`)
    return s
  }
export const nsid: Parse<string> = (s) => {
  if (!isValidNsid(s)) throw new Error('must be an NSID')
  return s
}
export const oneOf =
  <T extends string>(values: readonly T[]): Parse<T> =>
  (s) => {
    if (!values.includes(s as T)) throw new Error(`must be one of ${values.join(', ')}`)
    return s as T
  }
export const trustProxy: Parse<boolean | string> = (s) => {
  if (/^(1|true|yes|on)$/i.test(s)) return true
  if (/^(0|false|no|off|)$/i.test(s)) return false
  return s // a comma-separated list of addresses or CIDRs, as Fastify takes it
}
export const partition = orNull((s) => {
  const m = /^(\d+)\/(\d+)$/.exec(s)
  if (!m) throw new Error('must look like i/n, e.g. 0/4')
  const index = Number(m[1])
  const count = Number(m[2])
  if (count < 1 || index >= count) throw new Error('needs 0 <= i < n')
  return { index, count }
})

const MEMORY_UNITS: Record<string, number> = { kB: 1, MB: 1024, GB: 1024 * 1024 }

/** A Postgres memory size with its unit (`16MB`, `512kB`, `1GB`) from min to max kB. */
export const pgMemory =
  (minKb: number, maxKb: number, why: string): Parse<string> =>
  (s) => {
    const m = /^([1-9][0-9]*)(kB|MB|GB)$/.exec(s)
    const kb = m ? Number(m[1]) * MEMORY_UNITS[m[2]] : Number.NaN
    if (!m) throw new Error('must be a size with its unit, as Postgres writes it: 512kB, 16MB, 1GB')
    if (kb < minKb || kb > maxKb)
      throw new Error(`must be from ${minKb}kB to ${maxKb / 1024}MB (${why})`)
    return s
  }

/**
 * A `did:web` naming a host (a port written %3A), or null when empty: its document is
 * served at https://<host>/.well-known/did.json. A did:web with a path is served elsewhere
 * (/<path>/did.json), which this process does not do.
 */
export const didWeb = orNull((s) => {
  if (!s.startsWith('did:web:') || !isValidDid(s))
    throw new Error('must be a did:web, e.g. did:web:appview.example.com')
  const host = s.slice('did:web:'.length)
  if (host.includes(':'))
    throw new Error(
      'must name a host only (a port as %3A): a did:web with a path is not served at /.well-known/did.json',
    )
  let name: string
  try {
    name = decodeURIComponent(host)
  } catch {
    name = '/'
  }
  if (/[/?#@\\]/.test(name) || !URL.canParse(`https://${name}`))
    throw new Error('must name a host, e.g. did:web:appview.example.com')
  return s
})

/** An http(s) origin (scheme, host, port; no path), or null when empty. */
export const origin = orNull((s) => {
  url('http:', 'https:')(s)
  const u = new URL(s)
  if (u.pathname !== '/' || u.search || u.hash || u.username || u.password)
    throw new Error(
      'must be an origin (scheme, host and port) without a path, e.g. https://appview.example.com',
    )
  return u.origin
})
