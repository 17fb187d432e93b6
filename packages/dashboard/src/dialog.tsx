import { type ReactNode, useEffect, useId, useRef } from 'react'

/**
 * A modal <dialog>: the browser traps focus, Escape closes it, and focus
 * returns to what opened it. `onClose` runs however it closes.
 */
export function Dialog(props: { title: string; onClose: () => void; children: ReactNode; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null)
  const titleId = useId()
  useEffect(() => {
    const dialog = ref.current
    // React removes the element on close, before the browser could restore focus itself: do it here.
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null
    if (dialog && !dialog.open) dialog.showModal()
    return () => {
      dialog?.close()
      if (opener?.isConnected) opener.focus()
    }
  }, [])
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      className={props.wide ? 'wide' : undefined}
      onClose={props.onClose}
      onCancel={props.onClose}
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

/** "Delete X?" naming what goes with it; the destructive button is not the default one. */
export function ConfirmDialog(props: {
  title: string
  children: ReactNode
  confirm: string
  onConfirm: () => void | Promise<void>
  onClose: () => void
  error?: string | null
}) {
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      <div className="confirm-body">{props.children}</div>
      {props.error ? (
        <p role="alert" className="error">
          {props.error}
        </p>
      ) : null}
      <div className="actions">
        <button type="button" onClick={props.onClose}>
          Cancel
        </button>
        <button type="button" className="danger" onClick={() => void props.onConfirm()}>
          {props.confirm}
        </button>
      </div>
    </Dialog>
  )
}
