import { existsSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

// ARCHITECTURE.md is read by whoever joins the project: every path it names in backticks
// must exist, and every `file.ts symbol` it names must be declared in that file.

const ROOT = new URL('../../', import.meta.url).pathname
const DOC = readFileSync(`${ROOT}ARCHITECTURE.md`, 'utf8')

/** Paths are written from the repository root, or from src/ for the code's own folders. */
function resolvePath(p: string): string | null {
  for (const base of ['', 'src/']) {
    if (existsSync(`${ROOT}${base}${p}`)) return `${base}${p}`
  }
  return null
}

const PATH = /^[\w./-]+(\.(ts|cjs|json|md|zst|yml)|\/)$/

function spans(): string[] {
  return [...DOC.matchAll(/`([^`\n]+)`/g)].map((m) => m[1])
}

describe('ARCHITECTURE.md', () => {
  it('names only paths that exist', () => {
    const missing = spans()
      .map((s) => s.split(/\s+/)[0])
      .filter((p) => PATH.test(p) && p.includes('/') && !p.startsWith('/'))
      .filter((p) => resolvePath(p) === null)
    expect(missing).toEqual([])
  })

  it('names only symbols its files declare', () => {
    const wrong: string[] = []
    let checked = 0
    for (const span of spans()) {
      const [p, ...symbols] = span.split(/[\s,]+/)
      if (!PATH.test(p) || !p.endsWith('.ts') || symbols.length === 0) continue
      const file = resolvePath(p)
      if (file === null) continue // reported by the test above
      const text = readFileSync(`${ROOT}${file}`, 'utf8')
      for (const s of symbols.filter((x) => /^[A-Za-z_$][\w$.]*$/.test(x))) {
        const name = s.split('.')[0]
        const declared = new RegExp(
          `(function\\*?|class|interface|type|const|let|enum)\\s+${name}\\b|\\b${name}\\s*[(:=]`,
        )
        checked++
        if (!declared.test(text)) wrong.push(`${p} ${s}`)
      }
    }
    expect(wrong).toEqual([])
    expect(checked).toBeGreaterThan(5)
  })
})
