/** The conflicts in the pending panel: what each side did, field by field, and the ways out. */
import type { Conflict, ConflictResolution } from '@flagsync/sync-client'
import {
  conflictFields,
  conflictTitle,
  fieldLabel,
  formatValue,
  type HistoryEntry,
  myFields,
  whoChanged,
} from './conflict-model.js'
import { h, icon, replaceChildren, uid } from './dom.js'

export interface ConflictActions {
  resolve(conflict: Conflict, resolution: ConflictResolution, note: string): Promise<void>
  history(key: string): void
}

export class ConflictView {
  private key = ''

  constructor(
    private readonly el: HTMLElement,
    private readonly actions: ConflictActions,
  ) {}

  render(conflicts: readonly Conflict[], histories: ReadonlyMap<string, readonly HistoryEntry[]>): void {
    const key = JSON.stringify([conflicts.map((c) => c.id), conflicts.map((c) => histories.get(c.recordId)?.length)])
    if (key === this.key) return
    this.key = key
    this.el.hidden = conflicts.length === 0
    replaceChildren(
      this.el,
      ...(conflicts.length === 0
        ? []
        : [
            h(
              'h3',
              { class: 'conflicts-title' },
              conflicts.length === 1
                ? '1 change needs your decision'
                : `${conflicts.length} changes need your decision`,
            ),
            ...conflicts.map((c) => this.card(c, histories.get(c.recordId) ?? [])),
          ]),
    )
  }

  private card(conflict: Conflict, history: readonly HistoryEntry[]): HTMLElement {
    const titleId = uid('conflict-title')
    const rows = conflictFields(conflict).map((f) =>
      h(
        'tr',
        { 'data-field': f.field },
        h('th', { scope: 'row' }, f.label),
        h('td', {}, f.base),
        h('td', { class: 'conflict-mine' }, f.mine),
        h('td', { class: 'conflict-theirs' }, f.theirs),
      ),
    )
    const button = (label: string, resolution: ConflictResolution, note: string, primary = false) => {
      const b = h('button', { type: 'button', class: primary ? 'btn btn-small btn-primary' : 'btn btn-small' }, label)
      b.addEventListener('click', () => {
        b.disabled = true
        void this.actions.resolve(conflict, resolution, note).finally(() => {
          b.disabled = false
        })
      })
      return b
    }
    const flag = `“${conflict.recordId}”`
    const buttons =
      conflict.kind === 'deleted'
        ? [
            button('Re-create with my changes', 'recreate', `Re-creating ${flag} with your changes`, true),
            button('Drop my changes', 'theirs', `Dropped your changes to ${flag}`),
          ]
        : [
            button('Keep mine', 'mine', `Keeping your version of ${flag}`, true),
            button('Take theirs', 'theirs', `Took their version of ${flag}`),
            this.mergeButton(conflict),
          ]
    const historyButton = h('button', { type: 'button', class: 'btn btn-ghost btn-small' }, icon('clock'), 'History')
    historyButton.addEventListener('click', () => this.actions.history(conflict.recordId))
    return h(
      'article',
      { class: 'conflict', 'data-key': conflict.recordId, 'data-kind': conflict.kind, 'aria-labelledby': titleId },
      h(
        'p',
        { class: 'conflict-head', id: titleId },
        icon('alert', 'icon'),
        conflictTitle(conflict, whoChanged(conflict, history)),
      ),
      h(
        'table',
        { class: 'conflict-table' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Field'),
            h('th', { scope: 'col' }, 'Before'),
            h('th', { scope: 'col' }, 'Yours'),
            h('th', { scope: 'col' }, 'Theirs'),
          ),
        ),
        h('tbody', {}, ...rows),
      ),
      h('div', { class: 'conflict-actions' }, ...buttons, historyButton),
    )
  }

  /** "Edit a merge": each field both changed, prefilled with mine, sent on top of theirs. */
  private mergeButton(conflict: Conflict): HTMLButtonElement {
    const open = h('button', { type: 'button', class: 'btn btn-small' }, 'Edit a merge')
    open.addEventListener('click', () => {
      const mine = myFields(conflict)
      const fields = conflict.fields.filter((f) => f in mine && f !== 'rules')
      const inputs = fields.map((field) => {
        const id = uid('merge')
        const value = mine[field]
        const input =
          field === 'is_enabled'
            ? h('input', { id, type: 'checkbox', checked: value === true })
            : field === 'rollout_percentage'
              ? h('input', {
                  id,
                  type: 'number',
                  min: 0,
                  max: 100,
                  step: 1,
                  value: value === null ? '' : String(value),
                })
              : h('input', { id, type: 'text', value: value === null ? '' : String(value) })
        const theirs = `Theirs: ${formatValue(field, conflict.current?.[field])}`
        return {
          field,
          input,
          row: h('div', { class: 'field' }, h('label', { for: id }, fieldLabel(field)), input, h('small', {}, theirs)),
        }
      })
      const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
      const save = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Save merge')
      const titleId = uid('merge-title')
      const form = h(
        'form',
        { class: 'dialog-form' },
        ...inputs.map((i) => i.row),
        h('div', { class: 'dialog-actions' }, cancel, save),
      )
      const dialog = h(
        'dialog',
        { class: 'dialog', 'aria-labelledby': titleId },
        h('h2', { id: titleId, class: 'dialog-title' }, `Merge “${conflict.recordId}”`),
        form,
      )
      document.body.append(dialog)
      dialog.addEventListener('close', () => dialog.remove())
      cancel.addEventListener('click', () => dialog.close())
      form.addEventListener('submit', (event) => {
        event.preventDefault()
        const merged: Record<string, unknown> = { ...(conflict.current ?? {}), ...mine }
        for (const { field, input } of inputs) {
          merged[field] =
            input.type === 'checkbox'
              ? input.checked
              : field === 'rollout_percentage'
                ? input.value === ''
                  ? null
                  : Number(input.value)
                : input.value === ''
                  ? null
                  : input.value
        }
        dialog.close()
        void this.actions.resolve(conflict, { record: merged }, `Saved a merge of “${conflict.recordId}”`)
      })
      dialog.showModal()
    })
    return open
  }
}
