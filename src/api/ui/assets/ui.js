// Enhancements only: every page works without this file. Keyboard paging ("n" / "p" on
// lists, when no field has focus), "/" to focus the search box, and a copy button for
// the prompt content. No data is fetched and no markup is built from page text.

document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return
  const t = e.target
  if (t && (t.isContentEditable || /^(INPUT|SELECT|TEXTAREA)$/.test(t.tagName))) return
  const go = (id) => {
    const a = document.getElementById(id)
    if (a) {
      e.preventDefault()
      a.click()
    }
  }
  if (e.key === 'n') go('page-next')
  else if (e.key === 'p') go('page-prev')
  else if (e.key === '/') {
    const q = document.getElementById('site-q')
    if (q) {
      e.preventDefault()
      q.focus()
    }
  }
})
for (const box of document.querySelectorAll('.copyable')) {
  const pre = box.querySelector('pre')
  if (!pre || !navigator.clipboard) continue
  const b = document.createElement('button')
  b.type = 'button'
  b.className = 'copy'
  b.textContent = 'Copy'
  b.addEventListener('click', () => {
    navigator.clipboard.writeText(pre.textContent).then(
      () => {
        b.textContent = 'Copied'
      },
      () => {
        b.textContent = 'Copy failed'
      },
    )
  })
  box.prepend(b)
}
