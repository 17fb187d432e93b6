import { useState } from 'react'
import { errorText } from './api.js'
import { Dialog } from './dialog.js'
import { differenceRows } from './diff.js'
import { PromotionDiff } from './promote.js'
import type { ComparedFlag, Comparison } from './use-compare.js'

/** The rows of a flag's diff, oriented as a promotion changes the target: its value there, then the source's. */
export const promotionRows = (f: ComparedFlag) =>
  differenceRows(f.differences.map((d) => ({ field: d.field, from: d.to, to: d.from })))

/**
 * "Promote N flags to Production?" with what each changes there. `onConfirm` settles a 409 itself (the page names
 * the flags); anything else it throws stays in the dialog as an alert.
 */
export function ConfirmPromotion(props: {
  comparison: Comparison
  flags: ComparedFlag[]
  onConfirm: () => Promise<void>
  onClose: () => void
}) {
  const { comparison: c, flags } = props
  const [failed, setFailed] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const count = flags.length === 1 ? '1 flag' : `${flags.length} flags`
  async function confirm() {
    setBusy(true)
    setFailed(null)
    try {
      await props.onConfirm()
    } catch (e) {
      setFailed(errorText(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <Dialog title={`Promote ${count} to ${c.to.name}?`} onClose={props.onClose} wide>
      <div className="confirm-body">
        <p>
          Each flag is copied from {c.from.name} as it is there, all in one step: if any of them changed in {c.to.name}{' '}
          since you compared, nothing is promoted.
        </p>
        {flags.map((f) => (
          <section key={f.key} className="promotion-item" aria-label={`${f.key} in ${c.to.name}`}>
            <h3>
              <code>{f.key}</code> {f.status === 'only_in_from' ? `(new in ${c.to.name})` : null}
            </h3>
            <PromotionDiff
              diff={promotionRows(f)}
              from={c.from.name}
              target={c.to.name}
              label={`What promoting ${f.key} changes in ${c.to.name}`}
            />
          </section>
        ))}
      </div>
      {failed ? (
        <p role="alert" className="error">
          {failed}
        </p>
      ) : null}
      <div className="actions">
        <button type="button" onClick={props.onClose}>
          Cancel
        </button>
        <button type="button" className="primary" disabled={busy} onClick={() => void confirm()}>
          Promote {count}
        </button>
      </div>
    </Dialog>
  )
}
