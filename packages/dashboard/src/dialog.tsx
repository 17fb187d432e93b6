import { type FormEvent, type ReactNode, useEffect, useId, useRef, useState } from 'react'
import { errorText } from './api.js'

/**
 * A modal <dialog>: the browser traps focus, Escape closes it, and focus
 * returns to what opened it. `onClose` runs however it closes.
 *
 * Idempotent under StrictMode, which mounts, cleans up and mounts again on one
 * element: the cleanup must not call `close()` (its queued `close` event would
 * dismiss the dialog just reopened), and the opener is remembered from the first
 * run (in the second, focus is already inside the dialog).
 */
export function Dialog(props: { title: string; onClose: () => void; children: ReactNode; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null)
  const opener = useRef<HTMLElement | null>(null)
  const titleId = useId()
  useEffect(() => {
    const dialog = ref.current
    if (!dialog) return
    const active = document.activeElement
    if (opener.current === null && active instanceof HTMLElement && !dialog.contains(active)) opener.current = active
    if (!dialog.open) dialog.showModal()
    return () => {
      // Unmounting removes the element, which takes it out of the top layer without a `close` event; React
      // removes it before the browser could restore focus itself, so do it once the commit is over.
      const back = opener.current
      queueMicrotask(() => {
        if (!dialog.isConnected && back?.isConnected) back.focus()
      })
    }
  }, [])
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      className={props.wide ? 'wide' : undefined}
      // Escape: the parent unmounts the dialog; the browser's own close would only add a second onClose.
      onCancel={(event) => {
        event.preventDefault()
        props.onClose()
      }}
      // A close the browser forces (its close watcher) still reaches the parent.
      onClose={props.onClose}
    >
      <div className="dialog-head">
        <h2 id={titleId}>{props.title}</h2>
        <button type="button" className="ghost" aria-label="Close" onClick={props.onClose}>
          ×
        </button>
      </div>
      {props.children}
    </dialog>
  )
}

function ErrorLine(props: { error?: string | null }) {
  return props.error ? (
    <p role="alert" className="error">
      {props.error}
    </p>
  ) : null
}

/**
 * "Delete X?" naming what goes with it; the destructive button is not the default one. `onConfirm` throwing (an
 * `ApiError` from the service) shows its message in the dialog, which stays open (`failure` words it otherwise);
 * `error` shows one set outside. `wide` and `tone: 'primary'` suit a confirmation that is not a deletion.
 */
export function ConfirmDialog(props: {
  title: string
  children: ReactNode
  confirm: string
  onConfirm: () => void | Promise<void>
  onClose: () => void
  error?: string | null
  wide?: boolean
  tone?: 'danger' | 'primary'
  failure?: (error: unknown) => ReactNode
}) {
  const [failed, setFailed] = useState<{ error: unknown } | null>(null)
  const [busy, setBusy] = useState(false)
  async function confirm() {
    setBusy(true)
    setFailed(null)
    try {
      await props.onConfirm()
    } catch (e) {
      setFailed({ error: e })
    } finally {
      setBusy(false)
    }
  }
  return (
    <Dialog title={props.title} onClose={props.onClose} wide={props.wide}>
      <div className="confirm-body">{props.children}</div>
      {failed && props.failure ? (
        props.failure(failed.error)
      ) : (
        <ErrorLine error={failed ? errorText(failed.error) : props.error} />
      )}
      <div className="actions">
        <button type="button" onClick={props.onClose}>
          Cancel
        </button>
        <button type="button" className={props.tone ?? 'danger'} disabled={busy} onClick={() => void confirm()}>
          {props.confirm}
        </button>
      </div>
    </Dialog>
  )
}

/**
 * A dialog around a form: fields, the service's error as an alert, Cancel and
 * the submit button. `onSubmit` throwing (an `ApiError` from the service) shows
 * its message and keeps the dialog open with what was typed.
 */
export function FormDialog(props: {
  title: string
  submit: string
  onSubmit: () => Promise<void>
  onClose: () => void
  children: ReactNode
  wide?: boolean
  /** Disables the submit button (the reason belongs in the form's text). */
  disabled?: boolean
}) {
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  async function submit(event: FormEvent) {
    event.preventDefault()
    setBusy(true)
    try {
      await props.onSubmit()
      setError(null)
    } catch (e) {
      setError(errorText(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <Dialog title={props.title} onClose={props.onClose} wide={props.wide}>
      <form onSubmit={submit}>
        {props.children}
        <ErrorLine error={error} />
        <div className="actions">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={busy || props.disabled}>
            {props.submit}
          </button>
        </div>
      </form>
    </Dialog>
  )
}
