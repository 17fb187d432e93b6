/** The list of flags: one row per flag in sorted order, the filter, the summary line and the empty state. */
import type { FlagClient } from '@flagsync/flag-client'
import { byId, h, icon, replaceChildren, setText } from './dom.js'
import { FlagRow, type RowActions } from './flag-row.js'
import { type ConsoleFlag, toConsoleFlag } from './model.js'

/** What a row's buttons and the empty state ask of the console. */
export interface FlagListActions extends RowActions {
  openHistory(key: string): void
  focusConflict(key: string): void
  openCreate(): void
}

export class FlagList {
  /** The flag client has its first flags (from the server or its saved copy): an empty list means no flags. */
  ready = false
  private readonly rows = new Map<string, FlagRow>()
  private readonly list = byId<HTMLUListElement>('flag-list')
  private readonly empty = byId<HTMLDivElement>('flags-empty')
  private readonly summary = byId<HTMLParagraphElement>('flags-summary')
  private readonly filter = byId<HTMLInputElement>('filter')
  /** Flags with edits still in the outbox, and flags with an unresolved conflict. */
  private pending = new Set<string>()
  private conflicted = new Set<string>()

  constructor(
    private readonly flags: FlagClient,
    private readonly actions: FlagListActions,
  ) {
    this.filter.addEventListener('input', () => this.render())
  }

  /** The row of a flag, if it is listed. */
  row(key: string): FlagRow | undefined {
    return this.rows.get(key)
  }

  /** The listed flags' keys, in list order. */
  keys(): string[] {
    return [...this.rows.keys()]
  }

  setPending(pending: Set<string>): void {
    this.pending = pending
    for (const [key, row] of this.rows) row.setPending(pending.has(key))
  }

  setConflicted(keys: Set<string>): void {
    this.conflicted = keys
    for (const [key, row] of this.rows) markConflict(row, keys.has(key), () => this.actions.focusConflict(key))
  }

  render(): void {
    const all = this.flags.allFlags().map(toConsoleFlag)
    this.syncRows(all)
    const query = this.filter.value.trim().toLowerCase()
    let shown = 0
    for (const flag of all) {
      const match =
        query === '' || flag.key.toLowerCase().includes(query) || (flag.description ?? '').toLowerCase().includes(query)
      const row = this.rows.get(flag.key)
      if (row) row.el.hidden = !match
      if (match) shown++
    }
    this.renderSummary(all)
    this.renderEmpty(all.length, shown, query)
  }

  /** One row per flag, in the flags' order: new ones added, gone ones removed, the others updated in place. */
  private syncRows(all: ConsoleFlag[]): void {
    const keys = new Set(all.map((f) => f.key))
    for (const [key, row] of this.rows) {
      if (!keys.has(key)) {
        row.el.remove()
        this.rows.delete(key)
      }
    }
    let previous: Element | null = null
    for (const flag of all) {
      let row = this.rows.get(flag.key)
      if (row) row.update(flag, this.pending.has(flag.key))
      else row = this.addRow(flag)
      // Keep sorted order, moving an element only when it is out of place (moving loses focus).
      const expected: Element | null = previous ? previous.nextElementSibling : this.list.firstElementChild
      if (expected !== row.el) {
        if (previous) previous.after(row.el)
        else this.list.prepend(row.el)
      }
      previous = row.el
    }
  }

  private addRow(flag: ConsoleFlag): FlagRow {
    const { actions } = this
    const row = new FlagRow(flag, {
      toggle: (key, enabled) => actions.toggle(key, enabled),
      save: (key, changes) => actions.save(key, changes),
      remove: (key, focus) => actions.remove(key, focus),
    })
    row.setPending(this.pending.has(flag.key))
    addHistoryButton(row, () => actions.openHistory(row.key))
    markConflict(row, this.conflicted.has(flag.key), () => actions.focusConflict(flag.key))
    // A flag added while the list is showing is new to the reader: draw the eye to it.
    if (this.ready && this.rows.size > 0) row.highlight()
    this.rows.set(flag.key, row)
    return row
  }

  private renderSummary(all: ConsoleFlag[]): void {
    if (!this.ready) {
      const refused = this.flags.status().lastError?.status === 401
      setText(
        this.summary,
        !navigator.onLine
          ? 'Offline, and no saved copy of the flags yet'
          : refused
            ? 'The server needs its SDK key to show flags'
            : 'Loading flags…',
      )
      return
    }
    const on = all.filter((f) => f.is_enabled).length
    const count = all.length === 1 ? '1 flag' : `${all.length} flags`
    setText(this.summary, all.length === 0 ? 'No flags yet' : `${count} · ${on} on`)
  }

  private renderEmpty(total: number, shown: number, query: string): void {
    const show = this.ready && shown === 0
    this.empty.hidden = !show
    this.list.hidden = show || total === 0
    if (!show) return
    const state = total === 0 ? 'none' : `filtered:${query}`
    if (this.empty.dataset.state === state) return
    this.empty.dataset.state = state
    if (total === 0) {
      const create = h('button', { type: 'button', class: 'btn btn-primary' }, icon('plus'), 'Create your first flag')
      create.addEventListener('click', () => this.actions.openCreate())
      replaceChildren(
        this.empty,
        h('h2', { class: 'empty-title' }, 'No flags yet'),
        h('p', { class: 'muted' }, 'A flag turns a feature on or off, for everyone or a share of your users.'),
        create,
      )
    } else {
      replaceChildren(this.empty, h('p', { class: 'muted' }, `No flags match “${query}”.`))
    }
  }
}

/** The row says its flag waits for a decision, with a way to it. */
function markConflict(row: FlagRow, conflicted: boolean, open: () => void): void {
  row.el.classList.toggle('has-conflict', conflicted)
  const existing = row.el.querySelector('.badge-conflict')
  if (!conflicted) {
    existing?.remove()
    return
  }
  if (existing) return
  const badge = h('button', { type: 'button', class: 'badge badge-conflict' }, icon('alert'), 'Changed by someone else')
  badge.addEventListener('click', open)
  row.el.querySelector('.flag-key-line')?.append(badge)
}

function addHistoryButton(row: FlagRow, open: () => void): void {
  const button = h(
    'button',
    { type: 'button', class: 'btn btn-ghost btn-small' },
    icon('clock'),
    'History',
    h('span', { class: 'visually-hidden' }, ` of ${row.key}`),
  )
  button.addEventListener('click', open)
  row.el.querySelector('.flag-actions')?.prepend(button)
}
