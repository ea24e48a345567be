// TIDs (atproto timestamp identifiers): 53 bits of microseconds then 10 bits of clock id,
// written in base32-sortable. Deriving revs from a strictly increasing clock makes them
// strictly increasing per repo, which is what an indexer's rev guard relies on.

const S32 = '234567abcdefghijklmnopqrstuvwxyz'

function encode(value: number, width: number): string {
  let out = ''
  let v = value
  for (let i = 0; i < width; i++) {
    out = S32[v % 32] + out
    v = Math.floor(v / 32)
  }
  return out
}

export function tidFromMicros(timeUs: number, clockId: number): string {
  if (!Number.isSafeInteger(timeUs) || timeUs < 0) throw new RangeError(`bad TID time ${timeUs}`)
  // 11 chars carry 55 bits, so a 53-bit time leaves the top bit 0 (first char in 2..j).
  return encode(timeUs, 11) + encode(clockId & 0x3ff, 2)
}

export function isoFromMs(ms: number): string {
  return new Date(ms).toISOString()
}
