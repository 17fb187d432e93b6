/** One flag in the list: its switch, summary, actions and inline editor. Updated in place. */
import { h, icon, replaceChildren, setAttr, setText, uid } from './dom.js'
import { FlagEditor } from './flag-editor.js'
import { type ConsoleFlag, OPERATOR_LABELS, rolloutLabel, ruleSummary } from './model.js'

export interface RowActions {
  toggle(key: string, enabled: boolean): void
  save(key: string, changes: Partial<ConsoleFlag>): Promise<void>
  remove(key: string, returnFocus: HTMLElement): void
}

export class FlagRow {
  readonly el: HTMLLIElement
  private flag: ConsoleFlag
  private readonly switchEl: HTMLButtonElement
  private readonly stateText: HTMLSpanElement
  private readonly pendingBadge: HTMLSpanElement
  private readonly descEl: HTMLParagraphElement
  private readonly rulesEl: HTMLUListElement
  private readonly meterFill: HTMLSpanElement
  private readonly rolloutText: HTMLSpanElement
  private readonly editButton: HTMLButtonElement
  private editor: FlagEditor | null = null

  constructor(
    flag: ConsoleFlag,
    private readonly actions: RowActions,
  ) {
    this.flag = flag
    const keyId = uid('flag-key')
    const editorId = uid('flag-editor')
    this.switchEl = h('button', {
      type: 'button',
      class: 'switch',
      role: 'switch',
      'aria-labelledby': keyId,
      onclick: () => this.actions.toggle(this.flag.key, !this.flag.is_enabled),
    })
    this.switchEl.append(h('span', { class: 'switch-thumb', 'aria-hidden': 'true' }))
    this.stateText = h('span', { class: 'switch-state', 'aria-hidden': 'true' })
    this.pendingBadge = h('span', { class: 'badge badge-pending', hidden: true }, 'Not synced yet')
    this.descEl = h('p', { class: 'flag-desc' })
    this.rulesEl = h('ul', { class: 'rule-chips', 'aria-label': `Targeting rules of ${flag.key}` })
    this.meterFill = h('span', { class: 'meter-fill' })
    this.rolloutText = h('span', { class: 'rollout-text' })
    this.editButton = h(
      'button',
      {
        type: 'button',
        class: 'btn btn-ghost btn-small',
        'aria-expanded': 'false',
        'aria-controls': editorId,
        onclick: () => (this.editor ? this.closeEditor(true) : this.openEditor(editorId)),
      },
      icon('edit'),
      'Edit',
      h('span', { class: 'visually-hidden' }, ` ${flag.key}`),
    )
    const deleteButton = h(
      'button',
      { type: 'button', class: 'btn btn-ghost btn-small btn-danger' },
      icon('trash'),
      'Delete',
      h('span', { class: 'visually-hidden' }, ` ${flag.key}`),
    )
    deleteButton.addEventListener('click', () => this.actions.remove(this.flag.key, deleteButton))

    this.el = h(
      'li',
      { class: 'flag', 'data-key': flag.key },
      h(
        'div',
        { class: 'flag-row' },
        h('div', { class: 'flag-switch' }, this.switchEl, this.stateText),
        h(
          'div',
          { class: 'flag-main' },
          h(
            'div',
            { class: 'flag-key-line' },
            h('code', { class: 'flag-key', id: keyId }, flag.key),
            this.pendingBadge,
          ),
          this.descEl,
          this.rulesEl,
        ),
        h(
          'div',
          { class: 'flag-rollout' },
          h('span', { class: 'meter', 'aria-hidden': 'true' }, this.meterFill),
          this.rolloutText,
        ),
        h('div', { class: 'flag-actions' }, this.editButton, deleteButton),
      ),
    )
    this.render(false)
    this.el.addEventListener('animationend', () => this.el.classList.remove('is-updated'))
  }

  get key(): string {
    return this.flag.key
  }

  update(flag: ConsoleFlag, pending: boolean): void {
    const changed = JSON.stringify(flag) !== JSON.stringify(this.flag)
    this.flag = flag
    this.render(pending)
    this.editor?.flagChanged(flag)
    if (changed) this.highlight()
  }

  /** A short highlight, so a change arriving from elsewhere catches the eye. */
  highlight(): void {
    this.el.classList.remove('is-updated')
    void this.el.offsetWidth // restart the animation
    this.el.classList.add('is-updated')
  }

  setPending(pending: boolean): void {
    this.pendingBadge.hidden = !pending
    this.el.classList.toggle('is-pending', pending)
  }

  private render(pending: boolean): void {
    const { flag } = this
    setAttr(this.switchEl, 'aria-checked', String(flag.is_enabled))
    setText(this.stateText, flag.is_enabled ? 'On' : 'Off')
    this.el.dataset.enabled = String(flag.is_enabled)
    this.setPending(pending)

    setText(this.descEl, flag.description ?? 'No description')
    this.descEl.classList.toggle('is-empty', flag.description === null)

    const chips = flag.rules.map((rule) =>
      h(
        'li',
        { class: 'rule-chip' },
        h('span', { class: 'rule-attr' }, rule.attribute),
        ` ${OPERATOR_LABELS[rule.operator]} `,
        h('span', { class: 'rule-values' }, rule.values.join(', ')),
      ),
    )
    const summary = flag.rules.map(ruleSummary).join('; ')
    if (this.rulesEl.dataset.summary !== summary) {
      this.rulesEl.dataset.summary = summary
      replaceChildren(this.rulesEl, ...chips)
    }
    this.rulesEl.hidden = flag.rules.length === 0

    const pct = flag.rollout_percentage ?? 100
    this.meterFill.style.width = `${pct}%`
    setText(this.rolloutText, rolloutLabel(flag))
    this.el.classList.toggle('is-partial', pct < 100)
  }

  private openEditor(id: string): void {
    this.editor = new FlagEditor(id, this.flag, {
      save: async (changes) => {
        await this.actions.save(this.flag.key, changes)
        this.closeEditor(true)
      },
      cancel: () => this.closeEditor(true),
    })
    this.el.append(this.editor.el)
    this.el.classList.add('is-editing')
    setAttr(this.editButton, 'aria-expanded', 'true')
    this.editor.focus()
  }

  private closeEditor(returnFocus: boolean): void {
    this.editor?.el.remove()
    this.editor = null
    this.el.classList.remove('is-editing')
    setAttr(this.editButton, 'aria-expanded', 'false')
    if (returnFocus) this.editButton.focus()
  }
}
