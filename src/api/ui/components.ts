import { FILTER_NAMES } from '../../model/flags.ts'
import type { Nsids } from '../../model/nsids.ts'
import { type Html, html, type Slot } from './html.ts'

// Small pieces shared by pages. Links are built only from checked, URL-encoded parts (a
// record's at-uri is parsed first, else shown as text): no record value reaches a URL.

/** A path segment of a page's link: record keys and DIDs travel encoded. */
export const seg = (s: string): string => encodeURIComponent(s)

export const promptHref = (did: string, rkey: string): string => `/prompts/${seg(did)}/${seg(rkey)}`
export const conversationHref = (did: string, rkey: string): string =>
  `/conversations/${seg(did)}/${seg(rkey)}`
export const agentHref = (did: string, rkey: string): string => `/agents/${seg(did)}/${seg(rkey)}`
export const repoHref = (did: string): string => `/repos/${seg(did)}`

export function listHref(query: Record<string, string | undefined>): string {
  const qs = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') qs.set(k, v)
  const s = qs.toString()
  return s ? `/prompts?${s}` : '/prompts'
}

const AT_URI =
  /^at:\/\/(did:[a-z]+:[A-Za-z0-9._:%-]{1,2000})\/([a-zA-Z0-9.-]{1,317})\/([A-Za-z0-9._:~-]{1,512})$/

/** The repo, collection and rkey of an at-uri with a DID authority, or null. */
export function parseAtUri(uri: unknown): { did: string; collection: string; rkey: string } | null {
  if (typeof uri !== 'string') return null
  const m = AT_URI.exec(uri)
  if (!m || m[3] === '.' || m[3] === '..') return null
  return { did: m[1], collection: m[2], rkey: m[3] }
}

/** A link to the agent page when `uri` names an agent record (by its name if given), else text. */
export function agentLink(uri: string | null, nsids: Nsids, name?: string): Html {
  if (uri === null) return html`<span class="muted">none</span>`
  const ref = parseAtUri(uri)
  if (!ref || ref.collection !== nsids.agent) return html`<code class="uri">${uri}</code>`
  const href = agentHref(ref.did, ref.rkey)
  return name
    ? html`<a class="agent-name" href="${href}" title="${uri}">${clipped(name)}</a>`
    : html`<a href="${href}"><code class="uri">${uri}</code></a>`
}

/** A repo by its verified handle, when known, with its DID beside it; always linked by DID. */
export function repoLink(did: string, handles: Map<string, string>): Html {
  const handle = handles.get(did)
  const didText = html`<code class="did" title="${did}">${did}</code>`
  return handle
    ? html`<span class="repo-name"><a class="repo" href="${repoHref(did)}">@${handle}</a> ${didText}</span>`
    : html`<a class="repo" href="${repoHref(did)}">${didText}</a>`
}

export function flagBadges(flags: readonly string[]): Html {
  if (flags.length === 0) return html`<span class="flag flag-ok">ok</span>`
  return html`${flags.map((f) => html`<span class="flag flag-${f}">${f}</span> `)}`
}

/** Visible prompts by flag, each count a link to the list of `filter` with that flag. */
export function flagCounts(
  caption: string,
  all: string,
  counts: { total: number } & Record<string, number>,
  filter: Record<string, string> = {},
): Html {
  return html`<table class="counts"><caption>${caption}</caption>
<thead><tr><th scope="col">flag</th><th scope="col" class="num">prompts</th></tr></thead>
<tbody><tr><th scope="row"><a href="${listHref(filter)}">${all}</a></th><td class="num">${counts.total}</td></tr>
${FILTER_NAMES.map(
  (f) =>
    html`<tr><th scope="row"><a href="${listHref({ ...filter, flag: f })}">${flagBadges(f === 'ok' ? [] : [f])}</a></th><td class="num">${counts[f] ?? 0}</td></tr>`,
)}</tbody></table>`
}

const ISO_TIME = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$/i

/**
 * A time as UTC in one format (`2026-11-30 12:00:00 UTC`) with the raw value as its title;
 * one without a zone, or not a datetime, is shown as given and says so.
 */
export function time(raw: string | null | undefined): Html {
  if (!raw) return html`<span class="muted">unknown</span>`
  const m = ISO_TIME.exec(raw)
  if (m && !m[4])
    return html`<span class="time" title="${raw}">${m[1]} ${m[2]} (no time zone given)</span>`
  const d = new Date(raw)
  if (!m || Number.isNaN(d.getTime()))
    return html`<span class="time raw" title="${raw}">${raw} (not a datetime)</span>`
  const iso = d.toISOString()
  return html`<time datetime="${iso}" title="${raw}">${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC</time>`
}

export const bytes = (n: number | null | undefined): string =>
  n == null ? 'unknown' : n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`

/** A definition list of facts; rows whose value is null are left out. */
export function facts(rows: Array<[string, Slot]>): Html {
  return html`<dl class="facts">${rows
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`
}

/** Record JSON as text: hostile strings stay text, and long ones stay in a scrolling box. */
export function jsonBlock(value: unknown, label: string): Html {
  return html`<details class="json"><summary>${label}</summary><pre tabindex="0">${JSON.stringify(value, null, 2)}</pre></details>`
}

export const str = (v: unknown): string | null => (typeof v === 'string' ? v : null)

/** Names shown in lists and headings are cut to this many characters. */
const NAME_MAX = 100

/** `text` cut to `max` characters with an ellipsis (never inside a surrogate pair). */
export function clipped(text: string, max = NAME_MAX): string {
  if (text.length <= max) return text
  const end = /[\uD800-\uDBFF]/.test(text[max - 2] ?? '') ? max - 2 : max - 1
  return `${text.slice(0, end)}…`
}
