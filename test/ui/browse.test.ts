import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Page } from 'playwright-core'
import { afterAll, describe, expect, it } from 'vitest'
import { axeProblems, type Browser, type PageDocument, useBrowserApp } from '../helpers/browser.ts'
import { indexDemoTraffic, indexShowcase, SHOWCASE_DID, SHOWCASE_HANDLE } from './fixtures.ts'

declare const document: PageDocument
declare const window: { innerWidth: number; scrollTo(x: number, y: number): void }

// A person's walk through the browse UI in headless Chromium, on the demo generator's
// traffic: overview, a flag filter, paging both ways, a prompt, a diff between two of its
// revisions, its conversation, agent and repo. axe checks every page on the way; its
// screenshots go to a temporary directory (docs/screenshots is made by npm run screenshots).
// driver-independent: what Chromium gets from the pages (markup, layout, keyboard, axe) is
// the same on either driver; pages.test.ts and the API tests read each page's data on Postgres.

const SHOTS = mkdtempSync(join(tmpdir(), 'pa-browse-shots-'))

let app: FastifyInstance
let b: Browser
let page: Page
let showcase: { rkey: string; agentRkey: string; revs: string[] }

useBrowserApp(
  async (deps) => {
    await indexDemoTraffic(deps, 2000)
    showcase = await indexShowcase(deps)
  },
  (x) => {
    ;({ app, b, page } = x)
  },
)
afterAll(() => rmSync(SHOTS, { recursive: true, force: true }))

// Pages beside the shared one, opened when first wanted and kept: a fresh context costs
// seconds (its renderer starts, and its first page and axe run cold).
let noJsPage: Page | undefined
let phonePage: Page | undefined
/** One page without JavaScript, for the tests that submit forms as such a browser does. */
const noJs = async () => {
  noJsPage ??= await b.newPage({ javaScript: false })
  return noJsPage
}
/** One page 390 px wide, a phone's. */
const phone = async () => {
  phonePage ??= await b.newPage({ width: 390 })
  return phonePage
}

const rowKeys = (p: Page) => p.locator('table.prompts tbody tr td:first-child a').allTextContents()

async function expectAccessible(p: Page): Promise<void> {
  expect(await axeProblems(p)).toEqual([])
}

describe('browsing in a real browser', () => {
  it('opens the overview with counts by flag, ingestion and recent changes', async () => {
    await page.goto('/')
    await expect(page.locator('h1').textContent()).resolves.toBe('Overview')
    const stats = JSON.parse((await app.inject('/v1/stats')).body)
    const allRow = page.locator('table.counts tr', { hasText: 'all prompts' })
    await expect(allRow.locator('td').textContent()).resolves.toBe(String(stats.prompts))
    await expect(page.locator('#ingest-h + p').textContent()).resolves.toContain('Ready')
    await expect(page.locator('.panel', { hasText: 'Ingestion' }).textContent()).resolves.toContain(
      'jetstream',
    )
    expect(await page.locator('table.changes tbody tr').count()).toBeGreaterThan(5)
    await expectAccessible(page)
    await page.screenshot({ path: join(SHOTS, 'overview.png') })
  })

  it('filters by a flag and pages forward and back', async () => {
    await page.goto('/')
    await page.locator('table.counts a', { hasText: 'staleMemory' }).click()
    await page.waitForURL(/\/prompts\?flag=staleMemory$/)
    const first = await rowKeys(page)
    expect(first).toHaveLength(25)
    const flagCells = await page.locator('table.prompts tbody tr td:nth-child(3)').allTextContents()
    for (const cell of flagCells) expect(cell).toContain('staleMemory')
    await expect(page.locator('#f-flag').inputValue()).resolves.toBe('staleMemory')
    await expectAccessible(page)

    await page.locator('#page-next').click()
    await page.waitForURL(/cursor=/)
    expect(new URL(page.url()).searchParams.get('flag')).toBe('staleMemory')
    const second = await rowKeys(page)
    expect(second).toHaveLength(25)
    expect(second.filter((k) => first.includes(k))).toEqual([])
    expect(second[0] < first.at(-1)!).toBe(true)

    // The keyboard shortcut (the optional script) goes one further; the link goes back.
    await page.keyboard.press('n')
    await page.waitForURL((u) => (u.searchParams.get('prev') ?? '').split('.').length === 2)
    const third = await rowKeys(page)
    expect(third.filter((k) => second.includes(k))).toEqual([])
    await page.locator('#page-prev').click()
    await page.waitForURL((u) => (u.searchParams.get('prev') ?? '').split('.').length === 1)
    expect(await rowKeys(page)).toEqual(second)
    await page.locator('#page-prev').click()
    await page.waitForURL(/\/prompts\?flag=staleMemory$/)
    expect(await rowKeys(page)).toEqual(first)
  })

  it('filters by repo handle through the form, without JavaScript too', async () => {
    const p = await noJs()
    await p.goto('/prompts')
    await p.locator('#f-did').fill(SHOWCASE_HANDLE)
    await p.locator('.filters button[type=submit]').click()
    await p.waitForURL(/did=showcase\.test/)
    expect(await rowKeys(p)).toEqual([showcase.rkey])
  })

  it('orders by the selector without JavaScript, and the next page keeps the order', async () => {
    const p = await noJs()
    await p.goto('/prompts')
    await p.locator('#f-sort').selectOption('size')
    await p.locator('.filters button[type=submit]').click()
    await p.waitForURL(/sort=size/)
    const answer = await app.inject('/v1/prompts?sort=size&limit=50')
    const want = (answer.json().items as Array<{ rkey: string; contentBytes: number | null }>).map(
      (i) => i.rkey,
    )
    expect(await rowKeys(p)).toEqual(want.slice(0, 25))
    await expect(p.locator('table.prompts caption').textContent()).resolves.toContain(
      'largest content first',
    )
    await p.locator('#page-next').click()
    await p.waitForURL(/cursor=/)
    expect(new URL(p.url()).searchParams.get('sort')).toBe('size')
    expect(await rowKeys(p)).toEqual(want.slice(25, 50))
    await expect(p.locator('#f-sort').inputValue()).resolves.toBe('size')
  })

  it('searches prompt text from the search box, with the matches marked', async () => {
    await page.goto('/')
    await page.locator('#site-q').fill('summarize')
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/prompts\?q=summarize$/)
    expect(await rowKeys(page)).toEqual([showcase.rkey])
    await expect(page.locator('.snippet mark').first().textContent()).resolves.toBe('summarize')
    await expect(page.locator('#f-q').inputValue()).resolves.toBe('summarize')
    await expectAccessible(page)
  })

  it('opens a prompt with its core memory marked, flags and revisions', async () => {
    await page.goto(`/prompts?did=${SHOWCASE_HANDLE}`)
    await page.locator('table.prompts tbody a', { hasText: showcase.rkey }).click()
    await page.waitForURL(new RegExp(`/prompts/[^/]+/${showcase.rkey}$`))
    await expect(page.locator('h1').textContent()).resolves.toContain(showcase.rkey)
    await expect(page.locator('#content mark.core').textContent()).resolves.toContain(
      'facts learned: 4',
    )
    expect(await page.locator('form.revisions tbody tr').count()).toBe(4)
    await expect(page.locator('.sub').textContent()).resolves.toContain(`@${SHOWCASE_HANDLE}`)
    await expectAccessible(page)
  })

  it('opens a diff between two revisions', async () => {
    // Oldest against newest: picked with the radio buttons, sent by the form (a GET).
    await page.locator(`#from-3`).check()
    await page.locator(`#to-0`).check()
    await page.locator('#compare').click()
    await page.waitForURL((u) => u.searchParams.has('from') && u.searchParams.has('to'))
    const url = new URL(page.url())
    expect(url.searchParams.get('from')).toBe(showcase.revs[0])
    expect(url.searchParams.get('to')).toBe(showcase.revs[3])
    const diff = page.locator('#diff')
    await expect(diff.locator('h2').textContent()).resolves.toContain(showcase.revs[0])
    const content = diff.locator('.diff').first()
    const inserted = (await content.locator('.d-ins').allTextContents()).join('\n')
    expect(inserted).toContain('+ facts learned: 4')
    expect(inserted).toContain('+ - summarize(text)')
    const deleted = (await content.locator('.d-del').allTextContents()).join('\n')
    expect(deleted).toContain('- facts learned: 1')
    // The 40 unchanged rules are folded into a count, not sent whole.
    await expect(content.locator('.fold').first().textContent()).resolves.toMatch(
      /\d+ unchanged lines/,
    )
    await expect(diff.locator('.diff').nth(1).locator('.d-ins').textContent()).resolves.toBe(
      '+ facts learned: 4',
    )
    await expectAccessible(page)
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({
      path: join(SHOTS, 'prompt-diff.png'),
      fullPage: true,
      clip: { x: 0, y: 0, width: 1280, height: 1500 },
    })
    // The per-revision link: what changed in one revision, against the one before it.
    await page.locator(`a[aria-label="what changed in revision ${showcase.revs[1]}"]`).click()
    await page.waitForURL(new RegExp(`to=${showcase.revs[1]}`))
    await expect(page.locator('#diff h2').textContent()).resolves.toContain(showcase.revs[0])
    await page.goto(`/prompts/${encodeURIComponent(SHOWCASE_DID)}/${showcase.rkey}`)
  })

  it('follows the links to its conversation, agent and repo', async () => {
    const promptUrl = page.url()
    await page.locator('.facts a', { hasText: 'conversation' }).click()
    await page.waitForURL(/\/conversations\//)
    await expect(page.locator('.facts').textContent()).resolves.toContain('Reading list')
    await expectAccessible(page)
    await page.locator('.facts a', { hasText: 'prompt' }).click()
    await page.waitForURL(promptUrl)

    await page.locator('.facts dd a[href^="/agents/"]').click()
    await page.waitForURL(/\/agents\//)
    await expect(page.locator('h1').textContent()).resolves.toContain('research assistant')
    await expect(
      page.locator('table.counts tr', { hasText: 'all' }).first().locator('td').textContent(),
    ).resolves.toBe('1')
    await expectAccessible(page)

    await page.goto(promptUrl)
    await page.locator('.sub a.repo').click()
    await page.waitForURL(/\/repos\//)
    await expect(page.locator('h1').textContent()).resolves.toContain(`@${SHOWCASE_HANDLE}`)
    await expect(page.locator('.facts').textContent()).resolves.toContain(SHOWCASE_DID)
    await expectAccessible(page)
  })

  it('is readable on a phone and in the dark, and keyboard-usable', async () => {
    const prompt = `/prompts/${encodeURIComponent(SHOWCASE_DID)}/${showcase.rkey}`
    const readable = async (p: Page) => {
      for (const url of ['/', prompt]) {
        await p.goto(url)
        const overflow = await p.evaluate(
          () => document.documentElement.scrollWidth - window.innerWidth,
        )
        expect(overflow, url).toBeLessThanOrEqual(0)
        await expectAccessible(p)
      }
    }
    // The phone's page and the shared one, dark for a while, side by side.
    const dark = async () => {
      await page.emulateMedia({ colorScheme: 'dark' })
      try {
        await readable(page)
      } finally {
        await page.emulateMedia({ colorScheme: 'light' })
      }
      // The skip link is the first stop of the keyboard and lands on the content.
      await page.goto('/')
      await page.keyboard.press('Tab')
      await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe(
        'Skip to content',
      )
      await page.keyboard.press('Enter')
      await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('main')
    }
    await Promise.all([readable(await phone()), dark()])
  })

  it('names agents and repos, gives times in one format and DIDs one line, at 1280 px and on a phone', async () => {
    const TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/
    const urls = [
      '/',
      '/prompts',
      '/prompts?q=coffee',
      `/repos/${encodeURIComponent(SHOWCASE_DID)}`,
    ]
    const check = async (p: Page, width: number) => {
      for (const url of urls) {
        await p.goto(url)
        const overflow = await p.evaluate(
          () => document.documentElement.scrollWidth - window.innerWidth,
        )
        expect(overflow, `${url} at ${width}`).toBeLessThanOrEqual(0)
        // One line each (about 20 px), where a wrapped DID took three.
        const dids = p.locator('code.did')
        for (let i = 0; i < Math.min(await dids.count(), 10); i++)
          expect((await dids.nth(i).boundingBox())?.height, `${url} at ${width}`).toBeLessThan(30)
        for (const t of await p.locator('time').allTextContents()) expect(t).toMatch(TIME)
        await expect(p.locator('time:not([title])').count()).resolves.toBe(0)
      }
    }
    // The shared page is 1280 px wide; the phone's is checked beside it.
    await Promise.all([check(page, 1280), check(await phone(), 390)])
    // Recent changes name an agent as its record does, the API's answer for its page.
    await page.goto('/')
    const agents = page.locator('table.changes a[href^="/agents/"]')
    expect(await agents.count()).toBeGreaterThan(0)
    for (let i = 0; i < Math.min(await agents.count(), 5); i++) {
      const href = (await agents.nth(i).getAttribute('href'))!
      const [, , did, rkey] = href.split('/')
      const answer = JSON.parse((await app.inject(`/v1/agents/${did}/${rkey}`)).body)
      const name = typeof answer.agent?.name === 'string' ? answer.agent.name.trim() : rkey
      await expect(agents.nth(i).textContent()).resolves.toBe(name)
    }
    // Nothing is wrong with these repos: the sync card does not alarm.
    await expect(page.locator('#sync-panel .warn').count()).resolves.toBe(0)
    await expect(page.locator('#sync-summary').textContent()).resolves.toContain(
      'known to be out of sync',
    )
  })

  it('loaded nothing from another origin and raised no dialog or console error', () => {
    expect(b.foreign).toEqual([])
    expect(b.dialogs).toEqual([])
    expect(b.consoleErrors).toEqual([])
  })
})
