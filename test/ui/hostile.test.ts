import type { FastifyInstance } from 'fastify'
import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import {
  axeProblems,
  type Browser,
  type PageDocument,
  type PageElement,
  useBrowserApp,
} from '../helpers/browser.ts'
import { apply, NSIDS, World } from '../helpers/events.ts'

declare const document: PageDocument
declare function getComputedStyle(el: PageElement): { display: string }

// Prompt text is hostile input. Records whose content, coreMemory, agent name, system
// template, conversation title and handle carry script tags, attribute breakouts,
// javascript: URLs and CSS injections are rendered in Chromium: every one must show as
// text, run nothing (no dialog), load nothing from another origin (127.0.0.2 stands for
// one; nothing listens there), and add no element. Also: a 200,000-byte prompt renders.
// driver-independent: escaping is the renderer's, whichever driver stored the text; the API
// tests store and read hostile and 200,000-byte text on Postgres.

const { conversation: C, agent: A } = NSIDS
const EVIL = 'did:plc:evilevilevilevilevilevil'
const FOREIGN = 'http://127.0.0.2:9'
const SCRIPT = `<script>alert('content')</script>`
const BREAKOUT = `"><img src=x onerror=alert('img')>`
const CSS = `</pre><style>body{display:none}</style><div style="background:url(${FOREIGN}/css)">css</div>`
const CORE = `<memory><script>alert('core')</script><img src="${FOREIGN}/core.png"></memory>`
const HANDLE = `evil"><script>alert('handle')</script>.test`
const AGENT_NAME = `<img src=x onerror=alert('name')>`
const TITLE = `"><svg onload=alert('title')>`

let app: FastifyInstance
let b: Browser
let page: Page
const rkeys = { hostile: '', linked: '', big: '', agent: '' }

/** The hostile records, a prompt linked to the hostile agent, and the big prompt twice. */
async function seedHostile(deps: IndexerDeps): Promise<void> {
  const w = new World()
  rkeys.hostile = w.tid()
  rkeys.linked = w.tid()
  rkeys.agent = w.tid()
  rkeys.big = w.tid()
  const agentUri = `at://${EVIL}/${A}/${rkeys.agent}`
  const content = `You are an agent.\n${SCRIPT}\n${BREAKOUT}\n${CSS}\n${CORE}\nEnd.`
  const line = 'The quick brown fox jumps over the lazy dog, again and again and again.\n'
  const big = (mid: string) => {
    const half = line.repeat(Math.floor(100_000 / line.length))
    return `${half}${mid}\n${half}`.padEnd(200_000, '.')
  }
  await apply(deps, [
    w.commit({
      did: EVIL,
      collection: A,
      rkey: rkeys.agent,
      record: {
        $type: A,
        name: AGENT_NAME,
        system: `</pre>${SCRIPT}`,
      },
    }),
    w.conversation({ did: EVIL, rkey: rkeys.hostile, record: { $type: C, title: TITLE } }),
    w.prompt({
      did: EVIL,
      rkey: rkeys.hostile,
      fields: {
        content,
        coreMemory: CORE,
        agent: `javascript:alert('agent')`,
        memfsRevision: `"><script>alert('memfs')</script>`,
      },
    }),
    w.conversation({ did: EVIL, rkey: rkeys.linked, record: { $type: C, title: 'plain' } }),
    w.prompt({ did: EVIL, rkey: rkeys.linked, fields: { agent: agentUri } }),
    w.prompt({
      did: EVIL,
      rkey: rkeys.big,
      fields: { content: big('first middle'), coreMemory: 'first middle' },
    }),
    { kind: 'identity', did: EVIL, handle: HANDLE, seq: 1, timeUs: w.tick() },
  ])
  await apply(deps, [
    w.prompt({
      did: EVIL,
      rkey: rkeys.big,
      op: 'update',
      fields: {
        content: big('later middle'),
        coreMemory: 'later middle',
      },
    }),
  ])
}
useBrowserApp(seedHostile, (x) => {
  ;({ app, b, page } = x)
})

const enc = encodeURIComponent
const newestRev = async (rkey: string): Promise<string> =>
  JSON.parse((await app.inject(`/v1/prompts/${EVIL}/${rkey}/revisions`)).body).items[0].rev

async function expectInert(p: Page, texts: string[]): Promise<void> {
  for (const t of texts)
    await expect(p.getByText(t, { exact: false }).first().isVisible(), t).resolves.toBe(true)
  const dom = await p.evaluate(() => ({
    imgs: document.querySelectorAll('img').length,
    svgs: document.querySelectorAll('svg').length,
    styles: document.querySelectorAll('style').length,
    inlineStyled: document.querySelectorAll('body [style]').length,
    scripts: [...document.querySelectorAll('script')]
      .map((s) => s.getAttribute('src'))
      .filter((src) => src !== '/assets/live.js'),
    jsLinks: document.querySelectorAll('a[href^="javascript:" i]').length,
    bodyShown: getComputedStyle(document.body).display !== 'none',
  }))
  expect(dom).toEqual({
    imgs: 0,
    svgs: 0,
    styles: 0,
    inlineStyled: 0,
    scripts: ['/assets/ui.js'],
    jsLinks: 0,
    bodyShown: true,
  })
  expect(await axeProblems(p)).toEqual([])
}

describe('hostile records render as text and run nothing', () => {
  it('the prompt page', async () => {
    await page.goto(`/prompts/${enc(EVIL)}/${rkeys.hostile}`)
    await expectInert(page, [
      SCRIPT,
      BREAKOUT,
      `background:url(${FOREIGN}/css)`,
      `javascript:alert('agent')`,
      HANDLE.slice(0, 20),
    ])
    await expect(page.locator('#content mark.core').textContent()).resolves.toBe(CORE)
  })

  it('the list, the overview, a repo filter and a search whose snippet is hostile', async () => {
    for (const url of ['/prompts', '/', `/prompts?did=${enc(EVIL)}`, '/prompts?q=alert']) {
      await page.goto(url)
      await expectInert(page, [`@${HANDLE}`])
    }
  })

  it('the agent and conversation pages', async () => {
    await page.goto(`/prompts/${enc(EVIL)}/${rkeys.linked}`)
    await page.locator('.facts dd a[href^="/agents/"]').click()
    await page.waitForURL(/\/agents\//)
    await expectInert(page, [AGENT_NAME])
    await page.locator('details summary', { hasText: 'System template' }).click()
    await expect(page.getByText(`</pre>${SCRIPT}`, { exact: true }).isVisible()).resolves.toBe(true)
    await page.goto(`/conversations/${enc(EVIL)}/${rkeys.hostile}`)
    await expectInert(page, [TITLE])
  })

  it('the repo page, whose handle is hostile', async () => {
    await page.goto(`/repos/${enc(EVIL)}`)
    await expectInert(page, [`@${HANDLE}`])
  })

  it('a 200,000-byte prompt renders whole and the page stays responsive', async () => {
    await page.goto(`/prompts/${enc(EVIL)}/${rkeys.big}`)
    const length = await page.locator('#content').evaluate((el) => el.textContent?.length)
    expect(length).toBe(200_000)
    await expect(page.locator('#content mark.core').textContent()).resolves.toBe('later middle')
    await page.keyboard.press('Tab')
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe(
      'Skip to content',
    )
    // Its diff: the one changed line among thousands, the unchanged runs folded to counts.
    await page.goto(`/prompts/${enc(EVIL)}/${rkeys.big}?to=${enc(await newestRev(rkeys.big))}`)
    const diff = page.locator('#diff .diff').first()
    await expect(diff.locator('.d-del').textContent()).resolves.toBe('- first middle')
    await expect(diff.locator('.d-ins').textContent()).resolves.toBe('+ later middle')
    const folds = await diff.locator('.fold').allTextContents()
    expect(
      folds.map((f) => Number(/(\d+) unchanged lines/.exec(f)?.[1])).every((n) => n > 1000),
    ).toBe(true)
    expect(await diff.evaluate((el) => el.textContent?.length)).toBeLessThan(2000)
  })

  it('nothing ran, and nothing was loaded from another origin', () => {
    expect(b.dialogs).toEqual([])
    expect(b.foreign).toEqual([])
    expect(b.consoleErrors).toEqual([])
  })
})
