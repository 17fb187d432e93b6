import type { Environment } from './types.js'

/**
 * A labelled choice of one of a project's environments, in their order; `anyLabel` adds a first option with the
 * value `''` (a filter's "all").
 */
export function EnvironmentSelect(props: {
  label: string
  value: string
  environments: readonly Environment[]
  onChange: (id: string) => void
  anyLabel?: string
}) {
  return (
    <label>
      {props.label}
      <select value={props.value} onChange={(e) => props.onChange(e.target.value)}>
        {props.anyLabel === undefined ? null : <option value="">{props.anyLabel}</option>}
        {props.environments.map((e) => (
          <option key={e.id} value={e.id}>
            {e.name}
          </option>
        ))}
      </select>
    </label>
  )
}
