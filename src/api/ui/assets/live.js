// The live overview: subscribes to /v1/changes/subscribe after the seq the page was read at,
// and on each change fetches this page again and swaps in its panels, so every number stays
// the server's count. While the subscription is refused or cut it polls every POLL_MS and
// reconnects with backoff. No markup is built from change data.

const POLL_MS = 10_000
const MIN_GAP_MS = 1_000
const MAX_BACKOFF_MS = 30_000

const root = document.getElementById('live')
const status = document.getElementById('live-status')

const live = {
  seq: Number(root?.dataset.seq) || 0,
  /** A change arrived that the panels do not show yet. */
  stale: false,
  state: 'connecting',
  why: '',
  updated: null,
  failures: 0,
  refreshing: false,
  again: false,
  lastRefresh: 0,
  refreshTimer: null,
  pollTimer: null,
}

const clock = (d) => `${d.toISOString().slice(11, 19)} UTC`

function show() {
  const when = live.updated ? ` Last updated ${clock(live.updated)}.` : ''
  const why = live.why ? ` (${live.why})` : ''
  const texts = {
    connecting: 'Connecting to live updates…',
    live: `Live: updates as changes arrive.${when}`,
    polling: `Live updates unavailable${why}: refreshing every ${POLL_MS / 1000} s and reconnecting.${when}`,
    down: `The server does not answer${why}: retrying.${when}`,
  }
  status.textContent = texts[live.state]
  status.dataset.state = live.state
  status.classList.toggle('off', live.state === 'polling' || live.state === 'down')
}

/** Swaps in the panels of a fresh rendering of this page; false when it has none. */
function swapIn(text) {
  const next = new DOMParser().parseFromString(text, 'text/html').getElementById('live')
  if (!next) return false
  live.stale = false
  live.seq = Math.max(live.seq, Number(next.dataset.seq) || 0)
  root.dataset.seq = String(live.seq)
  root.replaceChildren(...[...next.childNodes].map((n) => document.importNode(n, true)))
  live.updated = new Date()
  return true
}

async function fetchPage() {
  const r = await fetch(location.pathname + location.search, {
    headers: { accept: 'text/html' },
    cache: 'no-store',
  })
  if (!r.ok) throw new Error(`HTTP ${r.status}`)
  if (!swapIn(await r.text())) throw new Error('the page has no live panels')
}

async function refresh() {
  if (live.refreshing) {
    live.again = true
    return
  }
  live.refreshing = true
  live.lastRefresh = Date.now()
  try {
    await fetchPage()
    if (live.state === 'down') live.state = 'polling'
  } catch (err) {
    if (live.state !== 'live') {
      live.state = 'down'
      live.why = err instanceof Error ? err.message : String(err)
    }
  } finally {
    live.refreshing = false
    pollIfNeeded()
    show()
    if (live.again) {
      live.again = false
      schedule()
    }
  }
}

/** One refresh soon, at most one per MIN_GAP_MS however many changes arrive. */
function schedule() {
  if (live.refreshTimer) return
  const wait = Math.max(0, live.lastRefresh + MIN_GAP_MS - Date.now())
  live.refreshTimer = setTimeout(() => {
    live.refreshTimer = null
    void refresh()
  }, wait)
}

function startPolling() {
  if (!live.pollTimer) live.pollTimer = setInterval(() => void refresh(), POLL_MS)
}

function stopPolling() {
  clearInterval(live.pollTimer)
  live.pollTimer = null
}

/** Polls while not live, and while a replay, catch-up or backfill shows progress that moves between changes. */
function pollIfNeeded() {
  if (live.state !== 'live' || document.getElementById('progress-panel')) startPolling()
  else stopPolling()
}

function onFrame(data, conn) {
  let m = null
  try {
    m = JSON.parse(data)
  } catch {
    return
  }
  if (m && typeof m.error === 'string') conn.reason = m.error
  else if (m && typeof m.seq === 'number' && m.seq > live.seq) {
    live.seq = m.seq
    live.stale = true
    schedule()
  }
}

function onClose(e, conn) {
  live.state = 'polling'
  live.why =
    conn.reason || e.reason || (conn.opened ? 'the subscription was closed' : 'WebSocket refused')
  live.failures++
  startPolling()
  show()
  // Catch up at once after a cut, so what changed before the reconnect is on the page; a
  // refused subscription leaves the page as it was read, until the next poll.
  if (conn.opened) void refresh()
  const backoff = Math.min(MAX_BACKOFF_MS, 500 * 2 ** live.failures)
  setTimeout(connect, backoff / 2 + Math.random() * (backoff / 2))
}

function connect() {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:'
  const ws = new WebSocket(`${proto}//${location.host}/v1/changes/subscribe?since=${live.seq}`)
  const conn = { opened: false, reason: '' }
  ws.addEventListener('open', () => {
    conn.opened = true
    live.failures = 0
    live.state = 'live'
    live.why = ''
    pollIfNeeded()
    show()
    if (live.stale) schedule()
  })
  ws.addEventListener('message', (e) => onFrame(e.data, conn))
  ws.addEventListener('close', (e) => onClose(e, conn))
}

if (root && status) {
  if ('WebSocket' in window) connect()
  else {
    live.state = 'polling'
    live.why = 'this browser has no WebSocket'
    startPolling()
  }
  show()
}
