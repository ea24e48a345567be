import { registerHooks } from 'node:module'

// Loading the program's modules was most of its start-up, and half of that was Node
// parsing one JSON file again and again (bench/README.md, "Start-up: loading the modules").
// To tell the format of a `.js` file, Node 24 copies the nearest package.json's fields with
// an object spread (getFileProtocolModuleFormat -> getPackageScopeConfig in
// lib/internal/modules/package_json_reader.js), and the spread runs the lazy getter that
// parses `exports`: drizzle-orm's is 179 kB, parsed anew for each of its files the program
// loads, about twice each. So drizzle-orm's relative imports between its own files are
// answered here: drizzle-orm is `"type": "module"` and a relative specifier is a URL
// relative to its parent, which is what the default resolver answers, without the parse.

// Where this installation's drizzle-orm lives (its main entry is index.js at the root).
const DRIZZLE = new URL('./', import.meta.resolve('drizzle-orm')).href

/** A relative `.js` import between drizzle-orm's own files, or null for any other. */
export function resolveWithinDrizzle(specifier: string, parentURL: string | undefined) {
  if (!specifier.startsWith('.') || !specifier.endsWith('.js')) return null
  if (!parentURL?.startsWith(DRIZZLE)) return null
  const url = new URL(specifier, parentURL).href
  return url.startsWith(DRIZZLE) ? { url, format: 'module' as const, shortCircuit: true } : null
}

export function speedUpModuleLoading(): void {
  registerHooks({
    resolve: (specifier, context, nextResolve) =>
      resolveWithinDrizzle(specifier, context.parentURL) ?? nextResolve(specifier, context),
  })
}
