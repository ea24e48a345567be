import AxeBuilder from '@axe-core/playwright'
import type { FastifyInstance } from 'fastify'
import {
  type BrowserContext,
  chromium,
  type Page,
  type Browser as PlaywrightBrowser,
} from 'playwright-core'
import { afterAll, beforeAll } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import { makeApp } from '../api/fixtures.ts'
import { createTestDatabase } from './db.ts'
import { indexerDeps } from './events.ts'

// One headless Debian Chromium per test file (playwright-core drives the system binary;
// nothing is downloaded), with a fresh profile, no network services of its own, and a
// record of every request that leaves the app's origin and every dialog a page opens.

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export interface Browser {
  base: string
  /** Requests to any origin but the app's, as URLs. */
  foreign: string[]
  /** Messages of dialogs (alert, confirm, prompt) any page opened. */
  dialogs: string[]
  /** Console errors, CSP reports among them. */
  consoleErrors: string[]
  /**
   * A page in a context of its own: the browser process is shared, but each context starts
   * a renderer, and its first page and axe run are cold (seconds on a busy machine).
   */
  newPage(opts?: PageOptions): Promise<Page>
  close(): Promise<void>
}

export interface PageOptions {
  colorScheme?: 'light' | 'dark'
  width?: number
  javaScript?: boolean
}

/** Starts Chromium; `launch` gives it a fresh temporary profile, removed on close. */
const launchChromium = (): Promise<PlaywrightBrowser> =>
  chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS })

/**
 * Listens on a loopback port and points a browser at it: `launched`, when the caller started
 * Chromium early to overlap its start with other work, or one started now.
 */
export async function openBrowser(
  app: FastifyInstance,
  launched?: Promise<PlaywrightBrowser>,
): Promise<Browser> {
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  const origin = new URL(base).origin
  const browser = await (launched ?? launchChromium())
  const contexts: BrowserContext[] = []
  const foreign: string[] = []
  const dialogs: string[] = []
  const consoleErrors: string[] = []
  return {
    base,
    foreign,
    dialogs,
    consoleErrors,
    async newPage(opts = {}) {
      const context = await browser.newContext({
        baseURL: base,
        viewport: { width: opts.width ?? 1280, height: 900 },
        colorScheme: opts.colorScheme ?? 'light',
        javaScriptEnabled: opts.javaScript ?? true,
      })
      contexts.push(context)
      context.setDefaultTimeout(15_000)
      context.on('request', (r) => {
        const url = r.url()
        if (!url.startsWith('data:') && new URL(url).origin !== origin) foreign.push(url)
      })
      const page = await context.newPage()
      page.on('dialog', (d) => {
        dialogs.push(d.message())
        void d.dismiss()
      })
      page.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(m.text())
      })
      return page
    },
    async close() {
      for (const c of contexts) await c.close()
      await browser.close()
    },
  }
}

export interface BrowserApp {
  db: Database
  deps: IndexerDeps
  /** Closed after the file's tests: a test that replaces it (a restart) puts the new one here. */
  app: FastifyInstance
  b: Browser
  /** A 1280-px, light, scripted page, open for the file's tests to share. */
  page: Page
}

/**
 * Registers a browser test file's hooks: a test database filled by `seed`, the app on it,
 * Chromium (started while the seed runs) and one page, all closed after the file's tests.
 * `onReady` hands them to the file's variables.
 */
export function useBrowserApp(
  seed: (deps: IndexerDeps) => Promise<void>,
  onReady: (x: BrowserApp) => void,
): void {
  let launched: Promise<PlaywrightBrowser> | undefined
  let db: Database | undefined
  let app: FastifyInstance | undefined
  let rig: BrowserApp | undefined
  beforeAll(async () => {
    launched = launchChromium()
    // A seed that throws leaves the launch to afterAll, not to an unhandled rejection.
    launched.catch(() => undefined)
    db = await createTestDatabase()
    const deps = indexerDeps(db)
    await seed(deps)
    app = await makeApp(db)
    const b = await openBrowser(app, launched)
    rig = { db, deps, app, b, page: await b.newPage() }
    onReady(rig)
  }, 300_000)
  afterAll(async () => {
    if (rig) await rig.b.close()
    else await (await launched?.catch(() => undefined))?.close()
    await (rig?.app ?? app)?.close()
    await db?.close()
  })
}

/**
 * axe's serious and critical violations on the page as it is, as readable lines. Legacy
 * mode runs axe in the page itself: the default collects each frame's results in a blank
 * page of its own, a new renderer per check, and these pages have no frames to collect.
 * Only violations come back with every node (axe keeps one of each other kind): all we read.
 */
export async function axeProblems(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page })
    .setLegacyMode(true)
    .options({ resultTypes: ['violations'] })
    .analyze()
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
    )
}

/**
 * The browser globals that page.evaluate callbacks in the tests touch. The project's
 * tsconfig has no DOM lib (it would type the server code as if it ran in a browser), so a
 * test file declares `document` with this type at module scope.
 */
export interface PageElement {
  id: string
  textContent: string | null
  getAttribute(name: string): string | null
}
export interface PageDocument {
  querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement>
  activeElement: PageElement | null
  documentElement: { scrollWidth: number }
  body: PageElement
}
