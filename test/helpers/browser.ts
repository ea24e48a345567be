import AxeBuilder from '@axe-core/playwright'
import type { FastifyInstance } from 'fastify'
import { type BrowserContext, chromium, type Page } from 'playwright-core'

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
  /** A page in a context of its own (cheap: the browser process is shared). */
  newPage(opts?: PageOptions): Promise<Page>
  close(): Promise<void>
}

export interface PageOptions {
  colorScheme?: 'light' | 'dark'
  width?: number
  javaScript?: boolean
}

/**
 * Listens on a loopback port and opens a browser pointed at it. `launch` gives the browser
 * a fresh temporary profile (user-data-dir) of its own and removes it on close.
 */
export async function openBrowser(app: FastifyInstance): Promise<Browser> {
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  const origin = new URL(base).origin
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS })
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

/** axe's serious and critical violations on the page as it is, as readable lines. */
export async function axeProblems(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).analyze()
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
