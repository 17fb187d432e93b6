/** The inline editor of one flag (description, rollout, targeting rules), opened from its row. */
import { h, icon, setText, uid } from './dom.js'
import {
  type ConsoleFlag,
  diffFlag,
  OPERATOR_LABELS,
  OPERATORS,
  type Operator,
  parseValues,
  type Rule,
} from './model.js'

export interface EditorActions {
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
export class FlagEditor {
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
