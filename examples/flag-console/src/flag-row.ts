/** One flag in the list: its switch, summary, actions and inline editor. Updated in place. */
import { h, icon, replaceChildren, setAttr, setText, uid } from './dom.js'
import {
  type ConsoleFlag,
  diffFlag,
  OPERATOR_LABELS,
  OPERATORS,
  type Operator,
  parseValues,
  type Rule,
  rolloutLabel,
  ruleSummary,
} from './model.js'

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

interface EditorActions {
  save(changes: Partial<ConsoleFlag>): Promise<void>
  cancel(): void
}

interface RuleInputs {
  row: HTMLDivElement
  attribute: HTMLInputElement
  operator: HTMLSelectElement
  values: HTMLInputElement
}

/** Description, rollout and rules of one flag; saves only the fields that changed. */
class FlagEditor {
  readonly el: HTMLFormElement
  private readonly description: HTMLTextAreaElement
  private readonly rollout: HTMLInputElement
  private readonly slider: HTMLInputElement
  private readonly ruleList: HTMLDivElement
  private readonly error: HTMLParagraphElement
  private readonly notice: HTMLParagraphElement
  private rules: RuleInputs[] = []
  /** The flag as it was when the editor opened: the base of the diff. */
  private readonly base: ConsoleFlag

  constructor(
    id: string,
    flag: ConsoleFlag,
    private readonly actions: EditorActions,
  ) {
    this.base = flag
    const descId = uid('desc')
    const rolloutId = uid('rollout')
    const rolloutHint = uid('rollout-hint')
    const rulesHint = uid('rules-hint')
    this.description = h('textarea', { id: descId, rows: 2, maxlength: 10000, placeholder: 'What does it control?' })
    this.description.value = flag.description ?? ''
    this.rollout = h('input', {
      id: rolloutId,
      type: 'number',
      min: 0,
      max: 100,
      step: 1,
      inputmode: 'numeric',
      required: true,
      'aria-describedby': rolloutHint,
    })
    this.slider = h('input', {
      type: 'range',
      min: 0,
      max: 100,
      step: 1,
      // The number field is the accessible control; the slider is a pointer shortcut for it.
      'aria-hidden': 'true',
      tabindex: -1,
    })
    const pct = String(flag.rollout_percentage ?? 100)
    this.rollout.value = pct
    this.slider.value = pct
    this.slider.addEventListener('input', () => {
      this.rollout.value = this.slider.value
    })
    this.rollout.addEventListener('input', () => {
      this.slider.value = this.rollout.value
    })

    this.ruleList = h('div', { class: 'rule-rows' })
    for (const rule of flag.rules) this.addRule(rule, false)
    this.error = h('p', { class: 'form-error', role: 'alert' })
    this.notice = h('p', { class: 'form-notice', hidden: true })

    this.el = h(
      'form',
      { class: 'flag-editor', id, 'aria-label': `Edit ${flag.key}`, novalidate: true },
      h(
        'div',
        { class: 'editor-grid' },
        h('div', { class: 'field' }, h('label', { for: descId }, 'Description'), this.description),
        h(
          'div',
          { class: 'field' },
          h('label', { for: rolloutId }, 'Rollout'),
          h('div', { class: 'rollout-input' }, this.slider, this.rollout, h('span', { 'aria-hidden': 'true' }, '%')),
          h(
            'p',
            { class: 'hint', id: rolloutHint },
            'Percent of users, by user_id, who get the flag when no rule matches.',
          ),
        ),
      ),
      h(
        'fieldset',
        { class: 'rules-field', 'aria-describedby': rulesHint },
        h('legend', {}, 'Targeting rules'),
        h('p', { class: 'hint', id: rulesHint }, 'Users matching any rule always get the flag, whatever the rollout.'),
        this.ruleList,
        h(
          'button',
          { type: 'button', class: 'btn btn-ghost btn-small', onclick: () => this.addRule(null, true) },
          icon('plus'),
          'Add rule',
        ),
      ),
      this.notice,
      this.error,
      h(
        'div',
        { class: 'editor-actions' },
        h('button', { type: 'button', class: 'btn', onclick: () => this.actions.cancel() }, 'Cancel'),
        h('button', { type: 'submit', class: 'btn btn-primary' }, 'Save changes'),
      ),
    )
    this.el.addEventListener('submit', (event) => {
      event.preventDefault()
      void this.submit()
    })
    this.el.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        event.preventDefault()
        this.actions.cancel()
      }
    })
  }

  focus(): void {
    this.description.focus()
  }

  /** Someone else changed the flag while it is being edited: say so, keep the user's input. */
  flagChanged(flag: ConsoleFlag): void {
    const changed = Object.keys(diffFlag(this.base, flag)).filter((f) => f !== 'is_enabled')
    this.notice.hidden = changed.length === 0
    setText(this.notice, changed.length === 0 ? '' : 'This flag was changed elsewhere while you were editing.')
  }

  private addRule(rule: Rule | null, focus: boolean): void {
    const n = this.rules.length + 1
    const attribute = h('input', {
      type: 'text',
      class: 'rule-attribute',
      'aria-label': `Rule ${n} attribute`,
      placeholder: 'attribute, e.g. country',
      autocomplete: 'off',
      spellcheck: 'false',
      maxlength: 256,
    })
    const operator = h('select', { class: 'rule-operator', 'aria-label': `Rule ${n} operator` })
    for (const op of OPERATORS) operator.append(h('option', { value: op }, OPERATOR_LABELS[op]))
    const values = h('input', {
      type: 'text',
      class: 'rule-values-input',
      'aria-label': `Rule ${n} values, comma-separated`,
      placeholder: 'values, comma-separated',
      autocomplete: 'off',
      spellcheck: 'false',
    })
    if (rule) {
      attribute.value = rule.attribute
      operator.value = rule.operator
      values.value = rule.values.join(', ')
    }
    const inputs: RuleInputs = { row: h('div', { class: 'rule-row' }), attribute, operator, values }
    const remove = h(
      'button',
      { type: 'button', class: 'btn btn-ghost btn-icon', 'aria-label': `Remove rule ${n}` },
      icon('x'),
    )
    remove.addEventListener('click', () => {
      const index = this.rules.indexOf(inputs)
      this.rules.splice(index, 1)
      inputs.row.remove()
      this.renumber()
      const next = this.rules[index] ?? this.rules[index - 1]
      if (next) next.attribute.focus()
      else this.el.querySelector<HTMLButtonElement>('.rules-field > button')?.focus()
    })
    inputs.row.append(attribute, operator, values, remove)
    this.rules.push(inputs)
    this.ruleList.append(inputs.row)
    if (focus) attribute.focus()
  }

  private renumber(): void {
    this.rules.forEach((r, i) => {
      const n = i + 1
      r.attribute.setAttribute('aria-label', `Rule ${n} attribute`)
      r.operator.setAttribute('aria-label', `Rule ${n} operator`)
      r.values.setAttribute('aria-label', `Rule ${n} values, comma-separated`)
      r.row.querySelector('button')?.setAttribute('aria-label', `Remove rule ${n}`)
    })
  }

  private fail(message: string, field: HTMLElement): void {
    setText(this.error, message)
    field.setAttribute('aria-invalid', 'true')
    field.focus()
  }

  private async submit(): Promise<void> {
    for (const el of this.el.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid')
    setText(this.error, '')
    const pct = Number(this.rollout.value)
    if (this.rollout.value.trim() === '' || !Number.isInteger(pct) || pct < 0 || pct > 100) {
      this.fail('Rollout must be a whole number from 0 to 100.', this.rollout)
      return
    }
    const rules: Rule[] = []
    for (const [i, r] of this.rules.entries()) {
      const attribute = r.attribute.value.trim()
      const values = parseValues(r.values.value)
      if (attribute === '') return this.fail(`Rule ${i + 1} needs an attribute.`, r.attribute)
      if (values.length === 0) return this.fail(`Rule ${i + 1} needs at least one value.`, r.values)
      rules.push({ attribute, operator: r.operator.value as Operator, values })
    }
    const description = this.description.value.trim()
    const next: ConsoleFlag = {
      ...this.base,
      description: description === '' ? null : description,
      rollout_percentage: pct === 100 && this.base.rollout_percentage === null ? null : pct,
      rules,
    }
    const changes = diffFlag(this.base, next)
    delete changes.is_enabled
    if (Object.keys(changes).length === 0) {
      this.actions.cancel()
      return
    }
    try {
      await this.actions.save(changes)
    } catch (error) {
      setText(this.error, `Could not save: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
}
