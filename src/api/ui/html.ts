import { html as honoHtml } from 'hono/html'

// The one way markup is made in the UI. Every interpolated value is HTML-escaped (text and
// quoted attributes alike) unless it is itself the result of `html`, so record text cannot
// open a tag or leave an attribute. The signature narrows hono's `unknown` values to what
// a page may interpolate: a record field typed `unknown` (everything that comes out of a
// record) does not compile until it is turned into a string on purpose. No `raw()` is
// exported, and a test checks that none is imported anywhere under src/api/ui/.

export type Html = ReturnType<typeof honoHtml>
export type Slot = Html | string | number | boolean | null | undefined | readonly Slot[]

export function html(strings: TemplateStringsArray, ...values: Slot[]): Html {
  return honoHtml(strings, ...values)
}

/** Resolves a page to its text (components may be lazy; hono resolves nested promises). */
export async function render(page: Html): Promise<string> {
  return String(await page)
}
