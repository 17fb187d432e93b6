import type { Draft } from './flag-draft.js'
import { replaceAt } from './replace-at.js'
import { formatPercent, type WeightSummary } from './weights.js'

type Variants = Draft['variants']

/**
 * The editor's variants: value and weight per row, each row's live share and
 * the weights' problem if any (`weights`: of the built flag's variants, which the save button also checks).
 */
export function VariantRows(props: {
  variants: Variants
  weights: WeightSummary
  onChange: (variants: Variants) => void
}) {
  const { variants, weights, onChange } = props
  return (
    <fieldset>
      <legend>Variants</legend>
      <p className="hint" id="weights-hint">
        Weights are relative: each variant gets its weight divided by the total ({weights.total.toLocaleString('en')}).
      </p>
      {variants.map((v, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: rows are positional, like the variants themselves
        <div className="row" key={i} data-variant={i}>
          <label>
            Value {i + 1}
            <input
              value={v.value}
              onChange={(e) => onChange(replaceAt(variants, i, { ...v, value: e.target.value }))}
            />
          </label>
          <label>
            Weight {i + 1}
            <input
              inputMode="numeric"
              value={v.weight}
              aria-describedby="weights-hint"
              onChange={(e) => onChange(replaceAt(variants, i, { ...v, weight: e.target.value }))}
            />
          </label>
          <output className="share" aria-label={`Share of variant ${i + 1}`}>
            {weights.shares[i]?.problem ??
              (weights.shares[i]?.percent == null ? '—' : formatPercent(weights.shares[i]?.percent ?? 0))}
          </output>
          <button
            type="button"
            onClick={() => onChange(variants.filter((_, j) => j !== i))}
            aria-label={`Remove variant ${i + 1}`}
          >
            Remove
          </button>
        </div>
      ))}
      {weights.problem ? (
        <p role="alert" className="error">
          {weights.problem}
        </p>
      ) : null}
      <button type="button" onClick={() => onChange([...variants, { value: '', weight: '1' }])}>
        Add variant
      </button>
    </fieldset>
  )
}
