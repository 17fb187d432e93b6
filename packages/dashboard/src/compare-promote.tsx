import { useState } from 'react'
import { ConfirmDialog } from './dialog.js'
import { differenceRows } from './diff.js'
import { ErrorLine } from './error-line.js'
import { PromotionDiff } from './promote.js'
import {
  type ComparedFlag,
  type Comparison,
  type PromotionConflict,
  promotionConflictsOf,
  promotionRefusalOf,
  usePromoteMany,
} from './use-compare.js'

/** The rows of a flag's diff, oriented as a promotion changes the target: its value there, then the source's. */
export const promotionRows = (f: ComparedFlag) =>
  differenceRows(f.differences.map((d) => ({ field: d.field, from: d.to, to: d.from })))

const countOf = (n: number) => (n === 1 ? '1 flag' : `${n} flags`)

/**
 * "Promote N flags to Production" and its confirmation: one request for the chosen flags, each against the target
 * revision the comparison showed. A 409 goes to `onConflicts` (the page names each flag); any other failure stays
 * in the dialog.
 */
export function PromoteChosen(props: {
  projectId: string
  comparison: Comparison
  flags: ComparedFlag[]
  disabledReason: string | null
  onPromoted: (keys: string[]) => void
  onConflicts: (conflicts: PromotionConflict[]) => void
}) {
  const { comparison: c, flags } = props
  const [confirming, setConfirming] = useState(false)
  const promote = usePromoteMany(props.projectId)
  const confirm = async () => {
    try {
      await promote.mutateAsync({ from: c.from.id, to: c.to.id, flags })
      props.onPromoted(flags.map((f) => f.key))
    } catch (error) {
      const conflicts = promotionConflictsOf(error)
      if (!conflicts) throw error
      props.onConflicts(conflicts)
    }
    setConfirming(false)
  }
  return (
    <>
      <button
        type="button"
        disabled={props.disabledReason !== null || flags.length === 0}
        title={props.disabledReason ?? undefined}
        onClick={() => setConfirming(true)}
      >
        Promote {countOf(flags.length)} to {c.to.name}
      </button>
      {confirming ? (
        <ConfirmPromotion comparison={c} flags={flags} onClose={() => setConfirming(false)} onConfirm={confirm} />
      ) : null}
    </>
  )
}

/**
 * "Promote N flags to Production?" with what each changes there. `onConfirm` settles a 409 itself (the page names
 * the flags); a refusal it throws stays in the dialog, flag by flag where the service names them.
 */
function ConfirmPromotion(props: {
  comparison: Comparison
  flags: ComparedFlag[]
  onConfirm: () => Promise<void>
  onClose: () => void
}) {
  const { comparison: c, flags } = props
  const count = countOf(flags.length)
  return (
    <ConfirmDialog
      title={`Promote ${count} to ${c.to.name}?`}
      confirm={`Promote ${count}`}
      tone="primary"
      wide
      onConfirm={props.onConfirm}
      onClose={props.onClose}
      failure={(error) => <PromotionRefusal error={error} flags={flags} comparison={c} />}
    >
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
    </ConfirmDialog>
  )
}

/** Why nothing was promoted: each flag the service refused on a line of its own, else the service's words. */
function PromotionRefusal(props: { error: unknown; flags: ComparedFlag[]; comparison: Comparison }) {
  if (props.error === null) return null
  const lines = promotionRefusalOf(props.error, props.flags, props.comparison)
  if (!lines) return <ErrorLine errors={[props.error]} />
  return (
    <div role="alert" className="error">
      Nothing was promoted:
      <ul>
        {lines.map((line) => (
          <li key={line}>{line}</li>
        ))}
      </ul>
    </div>
  )
}
