// A seeded PRNG (sfc32 seeded through splitmix32) so a demo network is reproducible from one
// number: the same seed must give byte-identical event streams across runs and machines.

export interface Random {
  /** Uniform in [0, 1). */
  next(): number
  /** Uniform integer in [lo, hi], both inclusive. */
  int(lo: number, hi: number): number
  chance(p: number): boolean
  pick<T>(items: readonly T[]): T
  /** `n` lowercase hex characters. */
  hex(n: number): string
  /** `n` characters of the did:plc alphabet (base32, lowercase). */
  base32(n: number): string
}

const HEX = '0123456789abcdef'
const B32 = 'abcdefghijklmnopqrstuvwxyz234567'

function splitmix32(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x9e3779b9) >>> 0
    let z = s
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
    return (z ^ (z >>> 16)) >>> 0
  }
}

export function createRandom(seed: number): Random {
  const init = splitmix32(seed)
  let a = init()
  let b = init()
  let c = init()
  let d = init()
  const next = (): number => {
    a >>>= 0
    b >>>= 0
    c >>>= 0
    d >>>= 0
    let t = (a + b) | 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) | 0
    c = (c << 21) | (c >>> 11)
    d = (d + 1) | 0
    t = (t + d) | 0
    c = (c + t) | 0
    return (t >>> 0) / 4294967296
  }
  // Warm up: sfc32 output is poor for the first few draws.
  for (let i = 0; i < 12; i++) next()
  const int = (lo: number, hi: number): number => lo + Math.floor(next() * (hi - lo + 1))
  const chars = (alphabet: string, n: number): string => {
    let out = ''
    for (let i = 0; i < n; i++) out += alphabet[Math.floor(next() * alphabet.length)]
    return out
  }
  return {
    next,
    int,
    chance: (p) => p > 0 && next() < p,
    pick: (items) => items[Math.floor(next() * items.length)],
    hex: (n) => chars(HEX, n),
    base32: (n) => chars(B32, n),
  }
}
