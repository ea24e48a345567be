// A sparse index of a repo's MST, from hash-checked node blocks in any order: per node (by a
// 48-bit CID fingerprint) only its wanted entries and the children that can reach a wanted
// key, so a walk tells "seen, nothing wanted" from "missing" (bench/README.md, lab notes).

export interface CidLike {
  readonly bytes: Uint8Array
  toString(): string
}

interface TreeEntry {
  p: number
  k: Uint8Array
  v: CidLike
  t: CidLike | null
}
export interface NodeData {
  l: CidLike | null
  e: TreeEntry[]
}

export interface WantedLeaf {
  key: string
  cid: CidLike
}

interface IndexedNode {
  children: number[]
  leaves: WantedLeaf[]
}

export class MissingTreeBlockError extends Error {
  name = 'MissingTreeBlockError'
}

/** Last 6 bytes of the digest: an exact number, and sha-256 bytes are uniform. */
export function fingerprint(cid: CidLike): number {
  const b = cid.bytes
  const n = b.length
  return (
    b[n - 1] +
    b[n - 2] * 2 ** 8 +
    b[n - 3] * 2 ** 16 +
    b[n - 4] * 2 ** 24 +
    b[n - 5] * 2 ** 32 +
    b[n - 6] * 2 ** 40
  )
}

const decoder = new TextDecoder()
const MAX_DEPTH = 64

export class SparseMstIndex {
  readonly #ranges: Array<[string, string]>
  readonly #nodes = new Map<number, IndexedNode>()
  readonly #empty = new Set<number>()
  /** CIDs under wanted keys, so their record blocks are kept when they come after the node. */
  readonly wantedValues = new Set<string>()
  nodeCount = 0

  constructor(collections: string[]) {
    // "<nsid>/" up to "<nsid>0": '0' is the character after '/'.
    this.#ranges = collections.map((c) => [`${c}/`, `${c}0`])
  }

  isWantedKey(key: string): boolean {
    return this.#ranges.some(([lo, hi]) => key >= lo && key < hi)
  }

  /** True when the open interval (after, before) of keys can hold a wanted key. */
  #meets(after: string | null, before: string | null): boolean {
    return this.#ranges.some(
      ([lo, hi]) => (after === null || after < hi) && (before === null || before > lo),
    )
  }

  add(cid: CidLike, node: NodeData): void {
    this.nodeCount++
    const keys: string[] = []
    let prev = ''
    for (const e of node.e) {
      prev = prev.slice(0, e.p) + decoder.decode(e.k)
      keys.push(prev)
    }
    const children: number[] = []
    const leaves: WantedLeaf[] = []
    if (node.l && this.#meets(null, keys[0] ?? null)) children.push(fingerprint(node.l))
    node.e.forEach((e, i) => {
      if (this.isWantedKey(keys[i])) {
        leaves.push({ key: keys[i], cid: e.v })
        this.wantedValues.add(e.v.toString())
      }
      if (e.t && this.#meets(keys[i], keys[i + 1] ?? null)) children.push(fingerprint(e.t))
    })
    const fp = fingerprint(cid)
    if (children.length === 0 && leaves.length === 0) this.#empty.add(fp)
    else this.#nodes.set(fp, { children, leaves })
  }

  /** Every wanted leaf reachable from `root`; throws when a node on the way never came. */
  walk(root: CidLike): WantedLeaf[] {
    const out: WantedLeaf[] = []
    const visit = (fp: number, depth: number, label: string) => {
      if (depth > MAX_DEPTH) throw new MissingTreeBlockError(`MST deeper than ${MAX_DEPTH}`)
      if (this.#empty.has(fp)) return
      const node = this.#nodes.get(fp)
      if (!node) throw new MissingTreeBlockError(`MST node missing from the CAR (${label})`)
      out.push(...node.leaves)
      for (const child of node.children) visit(child, depth + 1, `under ${label}`)
    }
    visit(fingerprint(root), 0, root.toString())
    return out
  }
}
