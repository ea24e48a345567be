import { VERSION } from '../../config/version.ts'
import { type Html, html, type Slot } from './html.ts'

// The page shell: one stylesheet and one deferred script from this origin (the CSP allows
// nothing else), a skip link, the main navigation with the search box, and landmarks that
// screen readers and axe expect.

export interface PageOptions {
  title: string
  /** Which navigation entry is the current page. */
  nav?: 'overview' | 'prompts' | null
  /** Prefills the search box. */
  q?: string
  /** Keeps the page current through the change subscription (assets/live.js). */
  live?: boolean
}

export function layout(opts: PageOptions, body: Slot): Html {
  const current = (name: PageOptions['nav']) =>
    opts.nav === name ? html` aria-current="page"` : ''
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${opts.title} · prompt-appview</title>
<link rel="stylesheet" href="/assets/ui.css">
<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
<script src="/assets/ui.js" defer></script>
${opts.live ? html`<script src="/assets/live.js" defer></script>` : ''}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<nav aria-label="Main">
<a class="brand" href="/">prompt-appview</a>
<a href="/"${current('overview')}>Overview</a>
<a href="/prompts"${current('prompts')}>Prompts</a>
<a href="/docs">API docs</a>
</nav>
<form class="search" role="search" method="get" action="/prompts">
<label for="site-q">Search prompt text</label>
<input id="site-q" name="q" type="search" maxlength="1000" value="${opts.q ?? ''}" placeholder="words in the prompt">
<button type="submit">Search</button>
</form>
</header>
<main id="main" tabindex="-1">
${body}
</main>
<footer class="bottom"><p>prompt-appview ${VERSION} · read-only · <a href="/openapi.json">OpenAPI</a> · <a href="/metrics">metrics</a></p></footer>
</body>
</html>`
}

const TITLES: Record<number, string> = {
  400: 'That address has a problem',
  404: 'Not found',
  429: 'Too many requests',
  503: 'Temporarily unavailable',
}

/** The page for a request that cannot be answered; the message names the problem. */
export function errorPage(status: number, message: string): Html {
  const title = TITLES[status] ?? (status < 500 ? 'Request not understood' : 'Something went wrong')
  return layout(
    { title },
    html`<section class="error" aria-labelledby="error-title">
<h1 id="error-title">${title}</h1>
<p class="status">HTTP ${status}</p>
<p class="message">${message}</p>
<p><a href="/">Back to the overview</a> · <a href="/prompts">All prompts</a></p>
</section>`,
  )
}
