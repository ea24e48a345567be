import { html as honoHtml } from 'hono/html'

// The one way markup is made in the UI: every value is escaped unless it is itself `html`,
// and the signature refuses `unknown`, so a record field is made a string on purpose (no
// `raw()`: a test checks none is imported under src/api/ui/).

export type Html = ReturnType<typeof honoHtml>
export type Slot = Html | string | number | boolean | null | undefined | readonly Slot[]

export function html(strings: TemplateStringsArray, ...values: Slot[]): Html {
  return honoHtml(strings, ...values)
}

/** Resolves a page to its text (components may be lazy; hono resolves nested promises). */
export async function render(page: Html): Promise<string> {
  return String(await page)
}
