import type { FlagType } from '@flagsync/protocol'
import { type Draft, typeHint } from './flag-draft.js'
import { PrerequisiteRows } from './prerequisite-rows.js'
import { RuleRows } from './rule-rows.js'
import type { Environment } from './types.js'
import { VariantRows } from './variant-rows.js'
import type { WeightSummary } from './weights.js'

/** What the editor's fields edit: the draft, and for a new flag the environments it is created in. */
export interface FieldsProps {
  draft: Draft
  set: (patch: Partial<Draft>) => void
  /** Null when editing: the key is fixed and "Create in" is not offered. */
  creation: { environments: Environment[]; targets: 'all' | string; setTargets: (targets: string) => void } | null
}

/** The editor's fields: key, type, where, on; description; values and rollout; variants, rules, prerequisites. */
export function FlagFields(
  props: FieldsProps & {
    weights: WeightSummary
    segments: string[]
    knownKeys: string[]
  },
) {
  const { draft, set } = props
  return (
    <>
      <IdentityFields draft={draft} set={set} creation={props.creation} />
      <label>
        Description
        <input value={draft.description} maxLength={1000} onChange={(e) => set({ description: e.target.value })} />
      </label>
      <ValueFields draft={draft} set={set} />
      <VariantRows variants={draft.variants} weights={props.weights} onChange={(variants) => set({ variants })} />
      <RuleRows rules={draft.rules} segments={props.segments} onChange={(rules) => set({ rules })} />
      <PrerequisiteRows
        prerequisites={draft.prerequisites}
        knownKeys={props.knownKeys}
        onChange={(prerequisites) => set({ prerequisites })}
      />
    </>
  )
}

function IdentityFields({ draft, set, creation }: FieldsProps) {
  return (
    <div className="grid">
      <label>
        Key
        <input
          required
          pattern="[A-Za-z0-9_\-]+"
          maxLength={100}
          value={draft.key}
          readOnly={creation === null}
          onChange={(e) => set({ key: e.target.value })}
        />
      </label>
      <label>
        Type
        <select value={draft.type} onChange={(e) => set({ type: e.target.value as FlagType })}>
          <option value="boolean">boolean</option>
          <option value="string">string</option>
          <option value="integer">integer</option>
          <option value="json">json</option>
        </select>
      </label>
      {creation ? (
        <label>
          Create in
          <select value={creation.targets} onChange={(e) => creation.setTargets(e.target.value)}>
            <option value="all">every environment</option>
            {creation.environments.map((e) => (
              <option key={e.id} value={e.id}>
                {e.name} only
              </option>
            ))}
          </select>
        </label>
      ) : null}
      <label className="inline">
        <input type="checkbox" checked={draft.enabled} onChange={(e) => set({ enabled: e.target.checked })} />
        On
      </label>
    </div>
  )
}

function ValueFields({ draft, set }: Pick<FieldsProps, 'draft' | 'set'>) {
  const hint = typeHint(draft.type)
  return (
    <div className="grid">
      <label>
        Default value ({hint})
        <input value={draft.defaultValue} onChange={(e) => set({ defaultValue: e.target.value })} />
      </label>
      <label>
        Disabled value ({hint})
        <input value={draft.disabledValue} onChange={(e) => set({ disabledValue: e.target.value })} />
      </label>
      <label>
        Rollout %
        <input
          inputMode="numeric"
          placeholder="everyone"
          value={draft.rollout}
          onChange={(e) => set({ rollout: e.target.value })}
        />
      </label>
    </div>
  )
}
