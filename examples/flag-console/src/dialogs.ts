/** Modal dialogs on the native <dialog> element: it traps focus, closes on Escape and restores focus. */
import { h, icon, setText, uid } from './dom.js'
import { type ConsoleFlag, FLAG_KEY_PATTERN } from './model.js'

function dialogShell(titleText: string, ...body: HTMLElement[]): { dialog: HTMLDialogElement; titleId: string } {
  const titleId = uid('dialog-title')
  const dialog = h(
    'dialog',
    { class: 'dialog', 'aria-labelledby': titleId },
    h('h2', { id: titleId, class: 'dialog-title' }, titleText),
    ...body,
  )
  document.body.append(dialog)
  dialog.addEventListener('close', () => dialog.remove())
  return { dialog, titleId }
}

/** Asks to confirm a destructive action; resolves true when confirmed. */
export function confirmDialog(options: {
  title: string
  message: string
  confirmLabel: string
  returnFocus: HTMLElement
}): Promise<boolean> {
  return new Promise((resolve) => {
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
    const confirm = h('button', { type: 'button', class: 'btn btn-danger-solid' }, icon('trash'), options.confirmLabel)
    const { dialog } = dialogShell(
      options.title,
      h('p', { class: 'dialog-text' }, options.message),
      h('div', { class: 'dialog-actions' }, cancel, confirm),
    )
    let confirmed = false
    cancel.addEventListener('click', () => dialog.close())
    confirm.addEventListener('click', () => {
      confirmed = true
      dialog.close()
    })
    dialog.addEventListener('close', () => {
      resolve(confirmed)
      if (!confirmed && options.returnFocus.isConnected) options.returnFocus.focus()
    })
    dialog.showModal()
    cancel.focus()
  })
}

/** The "New flag" form. `exists` guards against replacing a flag by accident (an insert replaces). */
export function createFlagDialog(options: {
  exists(key: string): boolean
  create(flag: ConsoleFlag): Promise<void>
}): void {
  const keyId = uid('new-key')
  const keyHint = uid('new-key-hint')
  const descId = uid('new-desc')
  const rolloutId = uid('new-rollout')
  const enabledId = uid('new-enabled')
  const key = h('input', {
    id: keyId,
    type: 'text',
    required: true,
    maxlength: 100,
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'new-checkout',
    'aria-describedby': keyHint,
  })
  const description = h('textarea', { id: descId, rows: 2, maxlength: 10000, placeholder: 'What does it control?' })
  const rollout = h('input', { id: rolloutId, type: 'number', min: 0, max: 100, step: 1, inputmode: 'numeric' })
  rollout.value = '100'
  const enabled = h('input', { id: enabledId, type: 'checkbox' })
  const error = h('p', { class: 'form-error', role: 'alert' })
  const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
  const form = h(
    'form',
    { class: 'dialog-form', novalidate: true },
    h(
      'div',
      { class: 'field' },
      h('label', { for: keyId }, 'Key'),
      key,
      h('p', { class: 'hint', id: keyHint }, 'Letters, digits, “-” and “_”. Your code asks for the flag by this key.'),
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: descId }, 'Description ', h('span', { class: 'optional' }, '(optional)')),
      description,
    ),
    h(
      'div',
      { class: 'field-row' },
      h(
        'div',
        { class: 'field' },
        h('label', { for: rolloutId }, 'Rollout'),
        h('div', { class: 'input-suffix' }, rollout, h('span', { 'aria-hidden': 'true' }, '%')),
      ),
      h('div', { class: 'field field-check' }, enabled, h('label', { for: enabledId }, 'Turn on right away')),
    ),
    error,
    h(
      'div',
      { class: 'dialog-actions' },
      cancel,
      h('button', { type: 'submit', class: 'btn btn-primary' }, icon('plus'), 'Create flag'),
    ),
  )
  const { dialog } = dialogShell('New flag', form)
  cancel.addEventListener('click', () => dialog.close())

  const fail = (message: string, field: HTMLElement) => {
    setText(error, message)
    field.setAttribute('aria-invalid', 'true')
    field.focus()
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid')
    setText(error, '')
    const k = key.value.trim()
    if (!FLAG_KEY_PATTERN.test(k)) return fail('The key needs 1–100 letters, digits, “-” or “_”.', key)
    if (options.exists(k)) return fail(`A flag “${k}” already exists.`, key)
    const pct = Number(rollout.value)
    if (rollout.value.trim() === '' || !Number.isInteger(pct) || pct < 0 || pct > 100) {
      return fail('Rollout must be a whole number from 0 to 100.', rollout)
    }
    const desc = description.value.trim()
    options
      .create({
        key: k,
        is_enabled: enabled.checked,
        rollout_percentage: pct === 100 ? null : pct,
        description: desc === '' ? null : desc,
        rules: [],
      })
      .then(
        () => dialog.close(),
        (e: unknown) => setText(error, `Could not create the flag: ${e instanceof Error ? e.message : String(e)}`),
      )
  })
  dialog.showModal()
  key.focus()
}

/**
 * Asks for the server's SDK key (needed when the server runs with SDK_KEY).
 * `rejected`: the server refused the key kept in this browser; the dialog says so.
 */
export function connectDialog(options: {
  current: string | null
  rejected?: boolean
  save(key: string | null): void
}): void {
  const inputId = uid('sdk-key')
  const hintId = uid('sdk-key-hint')
  const errorId = uid('sdk-key-error')
  const rejected = options.rejected === true && options.current !== null
  const input = h('input', {
    id: inputId,
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': rejected ? `${errorId} ${hintId}` : hintId,
    'aria-invalid': rejected ? 'true' : null,
  })
  input.value = options.current ?? ''
  const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
  const forget = h(
    'button',
    { type: 'button', class: 'btn btn-ghost btn-danger', hidden: options.current === null },
    'Forget key',
  )
  const form = h(
    'form',
    { class: 'dialog-form' },
    h(
      'p',
      { class: 'dialog-text' },
      'This server asks for its SDK key before it shows flags or accepts changes. The key is kept in this browser only.',
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: inputId }, 'SDK key'),
      input,
      h(
        'p',
        { class: 'form-error', id: errorId, role: 'alert' },
        rejected ? 'The server rejected the key saved in this browser (HTTP 401). Enter the current key.' : '',
      ),
      h('p', { class: 'hint', id: hintId }, 'The value of SDK_KEY the server was started with.'),
    ),
    h(
      'div',
      { class: 'dialog-actions' },
      forget,
      cancel,
      h('button', { type: 'submit', class: 'btn btn-primary' }, icon('key'), 'Connect'),
    ),
  )
  const { dialog } = dialogShell('Connect to the server', form)
  cancel.addEventListener('click', () => dialog.close())
  forget.addEventListener('click', () => {
    dialog.close()
    options.save(null)
  })
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const key = input.value.trim()
    dialog.close()
    options.save(key === '' ? null : key)
  })
  dialog.showModal()
  input.focus()
}
