import { OPERATORS, type RuleDraft } from './flag-draft.js'
import { replaceAt } from './replace-at.js'

const NEW_RULE: RuleDraft = {
  kind: 'attribute',
  attribute: '',
  operator: 'equals',
  values: '',
  segmentKey: '',
  variant: '',
}

/**
 * The editor's rules in order (first match wins): an attribute with one of
 * the nine operators, or a segment, and the variant it serves.
 */
export function RuleRows(props: { rules: RuleDraft[]; segments: string[]; onChange: (rules: RuleDraft[]) => void }) {
  const { rules, onChange } = props
  // A rule may name a segment the project's list no longer has: keep it choosable rather than blanking the select.
  const segmentChoices = [...new Set([...props.segments, ...rules.map((x) => x.segmentKey).filter(Boolean)])]
  return (
    <fieldset>
      <legend>Rules (first match wins)</legend>
      {rules.map((r, i) => (
        <RuleRow
          // biome-ignore lint/suspicious/noArrayIndexKey: rules are ordered and positional
          key={i}
          index={i}
          rule={r}
          segmentChoices={segmentChoices}
          onEdit={(rule) => onChange(replaceAt(rules, i, rule))}
          onRemove={() => onChange(rules.filter((_, j) => j !== i))}
        />
      ))}
      <button type="button" onClick={() => onChange([...rules, NEW_RULE])}>
        Add rule
      </button>
    </fieldset>
  )
}

/** One rule: its kind, the segment or the attribute test, what it serves, and its removal. */
function RuleRow(props: {
  index: number
  rule: RuleDraft
  segmentChoices: string[]
  onEdit: (rule: RuleDraft) => void
  onRemove: () => void
}) {
  const { index: i, rule: r, onEdit: edit } = props
  return (
    <div className="row" data-rule={i}>
      <label>
        Rule {i + 1} kind
        <select value={r.kind} onChange={(e) => edit({ ...r, kind: e.target.value as RuleDraft['kind'] })}>
          <option value="attribute">attribute</option>
          <option value="segment">segment</option>
        </select>
      </label>
      {r.kind === 'segment' ? (
        <label>
          Segment
          <select value={r.segmentKey} onChange={(e) => edit({ ...r, segmentKey: e.target.value })}>
            <option value="">choose…</option>
            {props.segmentChoices.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
      ) : (
        <AttributeTest rule={r} onEdit={edit} />
      )}
      <label>
        Serves
        <input value={r.variant} placeholder="the default" onChange={(e) => edit({ ...r, variant: e.target.value })} />
      </label>
      <button type="button" onClick={props.onRemove} aria-label={`Remove rule ${i + 1}`}>
        Remove
      </button>
    </div>
  )
}

function AttributeTest({ rule: r, onEdit: edit }: { rule: RuleDraft; onEdit: (rule: RuleDraft) => void }) {
  return (
    <>
      <label>
        Attribute
        <input value={r.attribute} onChange={(e) => edit({ ...r, attribute: e.target.value })} />
      </label>
      <label>
        Operator
        <select value={r.operator} onChange={(e) => edit({ ...r, operator: e.target.value as RuleDraft['operator'] })}>
          {OPERATORS.map((op) => (
            <option key={op}>{op}</option>
          ))}
        </select>
      </label>
      <label>
        Values (comma-separated)
        <input value={r.values} onChange={(e) => edit({ ...r, values: e.target.value })} />
      </label>
    </>
  )
}
