// `npm run screenshots`: the README's pictures, made from the sample as `npm start` serves it.
// The real CLI replays examples/sample.ndjson into a temporary PGlite directory, Debian's
// Chromium (playwright-core drives /usr/bin/chromium; nothing is downloaded) opens the
// overview and the diff of the prompt with the most revisions, and docs/screenshots/*.png
// are written. Run it after changing the pages, and commit the pictures with the change.

import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const OUT = join(ROOT, 'docs/screenshots')
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const WIDTH = 1280

interface Server {
  child: ChildProcess
  base: string
}

/** `prompt-appview run` on the sample, once it listens and its replay has finished. */
async function startServer(dataDir: string): Promise<Server> {
  const args = ['src/cli/main.ts', 'run', '--source', 'replay']
  const child = spawn(process.execPath, [...args, '--replay-file', 'examples/sample.ndjson'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  child.stdout?.on('data', (d) => {
    log += d
  })
  child.stderr?.on('data', (d) => {
    log += d
  })
  const deadline = Date.now() + 120_000
  for (;;) {
    const base = /Server listening at (http:\/\/[^"\s]+)/.exec(log)?.[1]
    if (base && log.includes('replay finished')) return { child, base }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`the server did not start:\n${log}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}

interface PromptItem {
  did: string
  rkey: string
  recompiles: number
}

/** The prompt with the most revisions, and its oldest and newest rev. */
async function richestPrompt(base: string): Promise<{ path: string; from: string; to: string }> {
  const list = (await (await fetch(`${base}/v1/prompts?limit=100`)).json()) as {
    items: PromptItem[]
  }
  const best = list.items.reduce((a, b) => (b.recompiles > a.recompiles ? b : a))
  const path = `/prompts/${encodeURIComponent(best.did)}/${best.rkey}`
  const revs = (await (await fetch(`${base}/v1${path}/revisions`)).json()) as {
    items: Array<{ rev: string }>
  }
  const sorted = revs.items.map((r) => r.rev).sort()
  return { path, from: sorted[0], to: sorted.at(-1) ?? sorted[0] }
}

async function main(): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'pa-screenshots-'))
  const server = await startServer(join(tmp, 'data'))
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox'],
  })
  try {
    mkdirSync(OUT, { recursive: true })
    const page = await browser.newPage({
      viewport: { width: WIDTH, height: 900 },
      baseURL: server.base,
    })
    await page.goto('/')
    // The overview as a person sees it once its live updates are connected.
    await page.locator('#live-status[data-state="live"]').waitFor()
    // and once the replay has read the whole sample (the overview says so while it reads).
    await page.locator('#progress-panel').waitFor({ state: 'detached', timeout: 120_000 })
    await page.screenshot({
      path: join(OUT, 'overview.png'),
      fullPage: true,
      clip: { x: 0, y: 0, width: WIDTH, height: 1300 },
    })
    const p = await richestPrompt(server.base)
    await page.goto(`${p.path}?from=${p.from}&to=${p.to}#diff`)
    await page.evaluate('window.scrollTo(0, 0)')
    await page.screenshot({
      path: join(OUT, 'prompt-diff.png'),
      fullPage: true,
      clip: { x: 0, y: 0, width: WIDTH, height: 1500 },
    })
    process.stdout.write(`wrote ${join(OUT, 'overview.png')} and ${join(OUT, 'prompt-diff.png')}\n`)
  } finally {
    await browser.close()
    server.child.kill('SIGTERM')
    await new Promise((r) => server.child.once('exit', r))
    rmSync(tmp, { recursive: true, force: true })
  }
}

await main()
