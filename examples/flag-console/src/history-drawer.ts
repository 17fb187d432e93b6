/** A flag's history in a side drawer: who changed what, when, and from where (the server's audit trail). */
import { DECLARED_MARK, describeEntry, type HistoryEntry } from './conflict-model.js'
import { h, replaceChildren, uid } from './dom.js'

export function historyDrawer(key: string, load: () => Promise<HistoryEntry[]>, returnFocus: HTMLElement | null): void {
  const titleId = uid('history-title')
  const list = h('ol', { class: 'history-list', 'aria-busy': 'true' }, h('li', { class: 'muted' }, 'Loading…'))
  const close = h('button', { type: 'button', class: 'btn btn-small' }, 'Close')
  const dialog = h(
    'dialog',
    { class: 'dialog drawer', 'aria-labelledby': titleId },
    h('div', { class: 'drawer-head' }, h('h2', { id: titleId, class: 'dialog-title' }, `History of “${key}”`), close),
    list,
  )
  document.body.append(dialog)
  close.addEventListener('click', () => dialog.close())
  dialog.addEventListener('close', () => {
    dialog.remove()
    if (returnFocus?.isConnected) returnFocus.focus()
  })
  dialog.showModal()
  load().then(
    (entries) => {
      list.removeAttribute('aria-busy')
      if (entries.length === 0) {
        replaceChildren(list, h('li', { class: 'muted' }, 'No changes recorded yet.'))
        return
      }
      replaceChildren(
        list,
        ...entries.map((entry) => {
          const { who, declared, when, what, from } = describeEntry(entry)
          // A declared name is what the device said, not an identity the server checked: say so beside it.
          const mark = declared ? [' ', h('span', { class: 'history-declared muted' }, DECLARED_MARK)] : []
          return h(
            'li',
            { class: 'history-entry', 'data-revision': entry.revision },
            h('p', { class: 'history-who' }, h('strong', {}, who), ...mark, ` · ${when}`),
            h('ul', { class: 'history-what' }, ...what.map((line) => h('li', {}, line))),
            h('p', { class: 'history-from muted' }, from),
          )
        }),
      )
    },
    (error: unknown) => {
      list.removeAttribute('aria-busy')
      const reason = error instanceof Error ? error.message : String(error)
      replaceChildren(list, h('li', { class: 'pending-error' }, `The history could not be loaded: ${reason}`))
    },
  )
}
