import type { FastifyInstance } from 'fastify'
import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { axeProblems, type Browser, type PageDocument, useBrowserApp } from '../helpers/browser.ts'
import { apply, NSIDS, World } from '../helpers/events.ts'
import { lettaRecompiles } from '../helpers/letta-recompiles.ts'

declare const document: PageDocument
declare const window: { innerWidth: number }

// The revision page in headless Chromium (SPEC 14): a prompt Letta recompiled once of each
// kind leads each revision's diff with what changed, and shows the template, the memory and
// the metadata part once each, never the same change twice. And an agent record as broken
// as Letta's users may write one (a 10,000-character name, `system` not a string, `tags`
// not an array) is shown truncated in lists and breaks no page.
// driver-independent: what Chromium shows of the diffs and clipped names is the renderer's;
// revisions.test.ts and pages.test.ts read the same recompiles and broken agents on Postgres.

const DID = 'did:plc:lettaaaaaaaaaaaaaaaaaaaa'
const LONG_NAME = `agent ${'n'.repeat(10_000)}`

let app: FastifyInstance
let b: Browser
let page: Page
let rkey: string
let revs: string[]
const broken = { agent: '', prompt: '' }

useBrowserApp(
  async (deps) => {
    const w = new World()
    rkey = w.tid()
    await lettaRecompiles(deps, w, DID, rkey)
    broken.agent = w.tid()
    broken.prompt = w.tid()
    await apply(deps, [
      w.commit({
        did: DID,
        collection: NSIDS.agent,
        rkey: broken.agent,
        record: { $type: NSIDS.agent, name: LONG_NAME, system: 42, tags: 'not-a-list' },
      }),
      w.conversation({ did: DID, rkey: broken.prompt }),
      w.prompt({ did: DID, rkey: broken.prompt, fields: { agent: w.agentUri(DID, broken.agent) } }),
    ])
  },
  (x) => {
    ;({ app, b, page } = x)
  },
)
// The prompt's revisions as the API lists them, oldest first.
beforeAll(async () => {
  const page1 = JSON.parse((await app.inject(`/v1/prompts/${DID}/${rkey}/revisions`)).body)
  revs = page1.items.map((r: { rev: string }) => r.rev).reverse()
})

const promptUrl = (k: string) => `/prompts/${encodeURIComponent(DID)}/${k}`

/** Opens the diff of revision `n` (oldest 0) against the one before it, by its link. */
async function openRevision(n: number): Promise<void> {
  await page.goto(promptUrl(rkey))
  await page.locator(`a[aria-label="what changed in revision ${revs[n]}"]`).click()
  await page.waitForURL(new RegExp(`to=${revs[n]}`))
}

const sectionText = (title: string) =>
  page.locator('#diff h3', { hasText: title }).locator('xpath=following-sibling::*[1]')

describe('the revision page', () => {
  it('the revision list says what each recompile changed', async () => {
    await page.goto(promptUrl(rkey))
    const kinds = await page.locator('form.revisions tbody td.kind').allTextContents()
    expect(kinds).toEqual([
      'template changed',
      'memory changed: human.md',
      'metadata only',
      'first revision',
    ])
    expect(await axeProblems(page)).toEqual([])
  })

  it('a memory recompile leads with its file, and shows each part once', async () => {
    await openRevision(2)
    await expect(page.locator('#diff h2 .kind').textContent()).resolves.toBe(
      'Memory changed: human.md',
    )
    const h3 = await page.locator('#diff h3').allTextContents()
    expect(h3).toEqual(['Template', 'Memory', 'Metadata'])
    await expect(sectionText('Template').textContent()).resolves.toContain('no change')
    // Letta rewrites the metadata block at every recompile: its time line moves too.
    await expect(sectionText('Metadata').textContent()).resolves.toMatch(/recompiled/)
    await expect(sectionText('Metadata').textContent()).resolves.not.toContain('Sam')
    const inserted = await page.locator('#diff .d-ins').allTextContents()
    // The edited line appears once on the whole page's diff, under Memory.
    expect(inserted.filter((t) => t.includes('Sam likes tea')).length).toBe(1)
    await expect(sectionText('Memory').locator('.d-ins').textContent()).resolves.toContain(
      'Sam likes tea',
    )
    expect(await axeProblems(page)).toEqual([])
  })

  it('a metadata-only recompile says so, and only its metadata lines change', async () => {
    await openRevision(1)
    await expect(page.locator('#diff h2 .kind').textContent()).resolves.toBe('Metadata only')
    await expect(sectionText('Template').textContent()).resolves.toContain('no change')
    await expect(sectionText('Memory').textContent()).resolves.toContain('no change')
    const changed = await sectionText('Metadata').locator('.d-ins, .d-del').allTextContents()
    expect(changed.join('\n')).toMatch(/previous messages|recompiled/i)
  })

  it('a template recompile shows the template line and nothing under memory', async () => {
    await openRevision(3)
    await expect(page.locator('#diff h2 .kind').textContent()).resolves.toBe('Template changed')
    await expect(sectionText('Template').locator('.d-ins').textContent()).resolves.toContain(
      'Never lie.',
    )
    await expect(sectionText('Memory').textContent()).resolves.toContain('no change')
  })
})

describe('an agent record as broken as a user may write it', () => {
  it('is shown truncated in lists and on pages, and breaks none', async () => {
    const agentUrl = `/agents/${encodeURIComponent(DID)}/${broken.agent}`
    for (const url of ['/', '/prompts', `/prompts?did=${encodeURIComponent(DID)}`]) {
      const res = await page.goto(url)
      expect(res?.status(), url).toBe(200)
      const names = await page.locator(`a[href="${agentUrl}"]`).allTextContents()
      expect(names.length, url).toBeGreaterThan(0)
      for (const n of names) expect(n.length, url).toBeLessThan(200)
      // The prompt lists name it (the overview may show its record key instead).
      if (url !== '/')
        expect(
          names.some((n) => n.startsWith('agent nnn')),
          url,
        ).toBe(true)
      // Nowhere is the whole name on the page.
      await expect(page.locator('body').textContent()).resolves.not.toContain(LONG_NAME)
      // The page keeps its width: no element pushes it sideways.
      const wide = await page.evaluate(
        () => document.documentElement.scrollWidth > window.innerWidth + 1,
      )
      expect(wide, url).toBe(false)
    }
    for (const url of [promptUrl(broken.prompt), agentUrl]) {
      const res = await page.goto(url)
      expect(res?.status(), url).toBe(200)
      await expect(page.locator('h1').isVisible(), url).resolves.toBe(true)
    }
    expect(b.consoleErrors).toEqual([])
  })
})
