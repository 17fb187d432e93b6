import type { Draft } from './flag-draft.js'
import { replaceAt } from './replace-at.js'

type Prerequisites = Draft['prerequisites']

/** The editor's prerequisites: a flag of the project and the value it must serve (empty: on). */
export function PrerequisiteRows(props: {
  prerequisites: Prerequisites
  knownKeys: string[]
  onChange: (prerequisites: Prerequisites) => void
}) {
  const { prerequisites, knownKeys, onChange } = props
  return (
    <fieldset>
      <legend>Prerequisites</legend>
      {prerequisites.map((p, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: positional rows
        <div className="row" key={i} data-prerequisite={i}>
          <label>
            Requires flag
            <select
              value={p.key}
              onChange={(e) => onChange(replaceAt(prerequisites, i, { ...p, key: e.target.value }))}
            >
              {knownKeys.map((k) => (
                <option key={k}>{k}</option>
              ))}
            </select>
          </label>
          <label>
            To serve (JSON; empty: on)
            <input
              value={p.required}
              onChange={(e) => onChange(replaceAt(prerequisites, i, { ...p, required: e.target.value }))}
            />
          </label>
          <button
            type="button"
            onClick={() => onChange(prerequisites.filter((_, j) => j !== i))}
            aria-label={`Remove prerequisite ${i + 1}`}
          >
            Remove
          </button>
        </div>
      ))}
      <button
        type="button"
        disabled={knownKeys.length === 0}
        onClick={() => onChange([...prerequisites, { key: knownKeys[0] ?? '', required: '' }])}
      >
        Add prerequisite
      </button>
    </fieldset>
  )
}
